// gknn/gknn.hpp: everything public.
#pragma once

#include "gknn/error.hpp"
#include "gknn/generate.hpp"
#include "gknn/index.hpp"
#include "gknn/info.hpp"
#include "gknn/io.hpp"
#include "gknn/join.hpp"
#include "gknn/recall.hpp"
#include "gknn/search.hpp"
#include "gknn/sharded_index.hpp"
#include "gknn/types.hpp"
