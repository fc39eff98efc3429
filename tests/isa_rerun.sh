#!/bin/sh
# Runs the unit tests again as a machine whose widest instruction set is ISA runs them
# (QFLEET_ISA caps the library's table: src/cpu/cpu_isa.cpp), unless ISA already is this
# machine's widest: then the plain run covered it and this one is reported skipped.
# usage: isa_rerun.sh CLI ISA TESTS [ARGS...]   (CLI: the qfleet tool, for `qfleet info`)
set -eu
cli=$1 isa=$2 tests=$3
shift 3
if [ -x "$cli" ]; then
  widest=$(env -u QFLEET_ISA "$cli" info | sed -n 's/.*"isas":\["\([a-z0-9]*\)".*/\1/p')
  if [ "$widest" = "$isa" ]; then
    echo "QFLEET_ISA=$isa is this machine's widest instruction set: the plain run covered it"
    exit 0
  fi
fi
QFLEET_ISA=$isa exec "$tests" "$@"
