// Every op of the engine, for model code: #include "ops/ops.h".
#pragma once

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/embedding.h"
#include "ops/convert.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
