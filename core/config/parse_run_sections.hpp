// The sections of a job that parse_job (core/config/parse_job.cpp) leaves to other files:
// training and parallelism (parse_training.cpp), and those about how it runs rather than what
// it trains (parse_run_sections.cpp): ensemble, cluster, checkpoint, faults and device. Each
// reports its problems into the reader's list.
#pragma once

#include "core/config/json_fields.hpp"
#include "core/job/job_config.hpp"

namespace troupe {

void read_training(object_reader r, training_config& t);
void read_parallelism(object_reader r, parallelism_config& p);
void read_ensemble(object_reader r, ensemble_config& e);
void read_cluster(object_reader r, cluster_config& c);
void read_checkpoint(object_reader r, checkpoint_config& c);
void read_faults(object_reader r, faults_config& f);
/// "device": one device or one per worker, at the top level.
void read_device(object_reader& top, std::vector<device_spec>& device);

}  // namespace troupe
