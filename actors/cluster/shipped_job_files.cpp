#include "actors/cluster/shipped_job_files.hpp"

#include "core/cluster/shipped_files.hpp"
#include "core/io/whole_file.hpp"
#include "core/model/network.hpp"
#include "messages/type_ids.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

namespace troupe {
namespace {

using namespace std::chrono_literals;

struct file_server_state {
  std::shared_ptr<const std::string> bytes;
  std::shared_ptr<trusted_nodes> trusted;
  static inline const char* name = "model_file_server";
};

caf::behavior file_server(caf::stateful_actor<file_server_state>* self,
                          std::shared_ptr<const std::string> bytes,
                          std::shared_ptr<trusted_nodes> trusted) {
  self->state.bytes = std::move(bytes);
  self->state.trusted = std::move(trusted);
  return {
      [self](chunk_atom, int64_t offset) -> caf::result<std::string> {
        const auto& bytes = *self->state.bytes;
        if (!sender_trusted(self, self->state.trusted.get()) || offset < 0 ||
            offset >= static_cast<int64_t>(bytes.size()))
          return caf::make_error(caf::sec::invalid_argument);
        const auto n =
            std::min<int64_t>(shipped_chunk_bytes, static_cast<int64_t>(bytes.size()) - offset);
        return bytes.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
      },
  };
}

std::shared_ptr<const std::string> read_model_file(const std::string& path) {
  std::shared_ptr<std::string> bytes;
  try {
    bytes = std::make_shared<std::string>(read_whole_file(path));
  } catch (const std::runtime_error& e) {
    throw model_file_error(e.what());
  }
  if (bytes->empty())
    throw model_file_error(path + ": is empty");
  return bytes;
}

// Asks for the chunk at the receiver's position, appends it, and goes on until the file is whole.
void fetch_next(caf::event_based_actor* self, caf::actor server,
                std::shared_ptr<file_receiver> receiver,
                std::function<void(const std::string&)> done) {
  if (receiver->complete()) {
    try {
      receiver->finish();
    } catch (const std::exception& e) {
      return done(e.what());
    }
    return done("");
  }
  self->request(server, 30s, chunk_atom_v, receiver->received())
      .then(
          [self, server, receiver, done](std::string& chunk) {
            try {
              receiver->append(chunk);
            } catch (const std::exception& e) {
              return done(e.what());
            }
            fetch_next(self, server, receiver, done);
          },
          [self, done](caf::error& e) {
            done("fetching the model file: " + self->system().render(e));
          });
}

}  // namespace

shipment ship_job_files(caf::actor_system& system, const job_config& job,
                        std::shared_ptr<trusted_nodes> trusted) {
  shipment s;
  for (const auto& path : data_files(job.data)) {
    const auto d = digest_file(path);
    s.data_paths.push_back(d.path);
    s.data_bytes.push_back(d.bytes);
    s.data_sha256.push_back(d.sha256);
  }
  if (job.model.kind != model_kind::torchscript)
    return s;
  auto bytes = read_model_file(job.model.path);
  s.model_path = job.model.path;
  s.model_bytes = static_cast<int64_t>(bytes->size());
  s.model_sha256 = sha256_hex(*bytes);
  s.model_server = system.spawn(file_server, std::move(bytes), std::move(trusted));
  return s;
}

void receive_job_files(caf::event_based_actor* self, const shipment& files,
                       const std::string& model_path,
                       std::function<void(const std::string& failure)> done) {
  const auto n = files.data_paths.size();
  if (files.data_bytes.size() != n || files.data_sha256.size() != n)
    return done("the coordinator's list of data files is malformed");
  std::vector<file_digest> data;
  for (std::size_t i = 0; i < n; ++i)
    data.push_back({files.data_paths[i], files.data_bytes[i], files.data_sha256[i]});
  if (auto why = data_mismatch(data); !why.empty())
    return done(why);
  if (!files.model_server)
    return done("");
  std::shared_ptr<file_receiver> receiver;
  try {
    receiver = std::make_shared<file_receiver>(
        model_path, file_digest{files.model_path, files.model_bytes, files.model_sha256});
  } catch (const std::exception& e) {
    return done(e.what());
  }
  fetch_next(self, files.model_server, std::move(receiver), std::move(done));
}

}  // namespace troupe
