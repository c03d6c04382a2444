// The public API of weir, in one include.
#ifndef WEIR_WEIR_H_
#define WEIR_WEIR_H_

#include "weir/config.h"
#include "weir/context.h"
#include "weir/functions.h"
#include "weir/job_control.h"
#include "weir/job_result.h"
#include "weir/key_group.h"
#include "weir/serializer.h"
#include "weir/state.h"
#include "weir/stream.h"

#endif  // WEIR_WEIR_H_
