#!/bin/sh
# Doxygen's input filter for qfleet's headers (docs/api/Doxyfile): their comments are plain
# `//` lines; Doxygen reads `///` lines (and `///<` after a member). A line that is only a
# comment becomes a `///` line, so each block documents the declaration below it, and a
# comment after a member's `;` or an enumerator's `,` documents that member. In the
# comments, physics' brackets (<O>, <Z_i>) are escaped: Doxygen would read them as HTML.
exec perl -pe '
  s{^(\s*)//(?!/)}{$1///};
  s{([;,])(\s*)//(?!/)}{$1$2///<};
  if (m{^(.*?///<?)(.*)$}) { my ($code, $text) = ($1, $2); $text =~ s{<(\w+)>}{\\<$1\\>}g; $_ = "$code$text\n"; }
' "$1"
