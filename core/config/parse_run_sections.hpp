// The sections of a job about how it runs rather than what it trains: ensemble, cluster,
// checkpoint, faults and device. Internal to parse_job (core/config/parse_job.cpp), which reads
// the rest; each reports its problems into the reader's list.
#pragma once

#include "core/job/job_config.hpp"
#include "core/config/json_fields.hpp"

namespace troupe {

void read_ensemble(object_reader r, ensemble_config& e);
void read_cluster(object_reader r, cluster_config& c);
void read_checkpoint(object_reader r, checkpoint_config& c);
void read_faults(object_reader r, faults_config& f);
/// "device": one device or one per worker, at the top level.
void read_device(object_reader& top, std::vector<device_spec>& device);

}  // namespace troupe
