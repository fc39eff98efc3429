// qfleet: batched simulation of fleets of small quantum systems with exact gradients.
#pragma once

#include "qfleet/circuit.hpp"
#include "qfleet/error.hpp"
#include "qfleet/gates.hpp"
#include "qfleet/names.hpp"
#include "qfleet/observable.hpp"
#include "qfleet/open_system.hpp"
#include "qfleet/structured_ops.hpp"
#include "qfleet/device_lowering.hpp"
#include "qfleet/noise_model.hpp"
#include "qfleet/program.hpp"
#include "qfleet/version.hpp"
