#pragma once
// The kept figures on PostgreSQL: the same contracts as store/status.h and store/exposure.h, on
// a pg::Connection inside the caller's transaction. They throw pg::Error. The kept rows are
// sharded on PostgreSQL (schema/postgres/002_many_nodes.sql), so that concurrent transactions
// do not queue on one row: each figure here is the sum over the shards.
#include <string>
#include <vector>

#include "store/exposure.h"
#include "store/postgres/connection.h"
#include "store/status.h"

namespace payorch::store::pg {

StatusCounts status_counts(Connection& conn);
std::vector<ExposureRow> exposure(Connection& conn);
ExposureFigures exposure_of(Connection& conn, const std::string& provider, const std::string& currency);
std::vector<std::string> exposure_differences(Connection& conn);

}  // namespace payorch::store::pg
