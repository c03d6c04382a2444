// The public API of weir, in one include. A job that wants to compile
// faster includes only what it uses: weir/stream.h (and weir/connectors.h)
// always, weir/windowed_stream.h for windows, weir/joins.h for joins.
#ifndef WEIR_WEIR_H_
#define WEIR_WEIR_H_

#include "weir/config.h"
#include "weir/context.h"
#include "weir/functions.h"
#include "weir/job_control.h"
#include "weir/job_result.h"
#include "weir/key_group.h"
#include "weir/serializer.h"
#include "weir/joins.h"
#include "weir/state.h"
#include "weir/stream.h"
#include "weir/windowed_stream.h"

#endif  // WEIR_WEIR_H_
