// troupe._native: the in-process half of the Python module (python/troupe/__init__.py is the
// rest). A Run plans its job and claims its folder when made (a bad job raises JobError, naming
// every problem, before anything is written), then trains on a thread of its own, exactly as
// `troupe run` would, into the same folder. Python never runs on that thread: records are read
// back from the folder's metrics.jsonl, and Python's side waits in slices with the GIL released,
// so that Ctrl-C reaches it and becomes stop().
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/single_run.hpp"
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/io/weights_file.hpp"
#include "core/run/run_plan.hpp"
#include "core/suite/suite_config.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace py = pybind11;

namespace troupe {
namespace {

// A job given from Python: JSON text (a dict dumped) or a file's path, with --set assignments.
job_request request_of(const std::string& job_text, const std::string& job_path,
                       const std::vector<std::string>& sets) {
  if (!job_path.empty()) {
    run_command cmd;
    cmd.job = job_source{job_path, sets, {}, {}};
    return read_job_request(cmd);
  }
  // The job file's checks: JSON by line and column, keys given twice, the nesting's depth.
  return job_request_from_json("the job", parse_json_text(job_text, "the job"), sets);
}

// request_of for what runs here: a single job. A suite's jobs are processes of the troupe
// program, which troupe.<call>() (python/troupe/__init__.py) hands it to.
job_request single_job_request(const std::string& job_text, const std::string& job_path,
                               const std::vector<std::string>& sets, const std::string& call) {
  auto request = request_of(job_text, job_path, sets);
  if (is_suite(request.json))
    throw job_error(
        {"a suite runs as processes of the troupe program: troupe." + call + "() hands it there"});
  return request;
}

// The interpreter's main thread, which runs its finalization (set when the module is imported).
unsigned long main_thread_ident = 0;

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

class native_run {
 public:
  native_run(const std::string& job_text, const std::string& job_path,
             const std::vector<std::string>& sets, const std::string& out, bool force) {
    cmd_.job = job_source{job_path, sets, {}, {}};
    cmd_.force = force;
    cmd_.quiet = true;
    {
      py::gil_scoped_release unlocked;
      auto request = single_job_request(job_text, job_path, sets, "run");
      // The folder and the data are fixed here, against the working directory of the call: the
      // run writes and reads on a thread of its own, and a notebook's os.chdir (%cd) meanwhile
      // sent its weights and summary.json into another run's folder of the same name, and
      // its data path to a folder without the data.
      cmd_.out =
          std::filesystem::absolute(
              out.empty()
                  ? default_run_directory(parse_loaded_job(request.source, request.json).name)
                  : out)
              .lexically_normal()
              .string();
      run_.emplace(prepare_single_run(cmd_, std::move(request)));
      if (!run_->preloaded) {
        try {
          run_->preloaded = load_dataset(run_->plan.job.data, run_->plan.job.seed);
        } catch (const std::exception&) {
          // The run loads it again, fails as `troupe run` does and says why in summary.json.
        }
      }
    }
    worker_ = std::thread([this] {
      auto result = complete_single_run(cmd_, *run_, stop_);
      // Done: the folder's lock is let go (a finished Run held it while Python kept the object,
      // and another run into that folder was refused as if this one still wrote there), and so
      // is the data.
      run_->dir.reset();
      run_->preloaded.reset();
      std::lock_guard<std::mutex> lock(mutex_);
      result_ = std::move(result);
      changed_.notify_all();
    });
  }

  // Dropped while it trains: asked to stop after its step, and waited for, so that its folder
  // is left whole (weights and summary.json written) rather than cut off.
  ~native_run() {
    stop_.store(true);
    py::gil_scoped_release unlocked;
    if (worker_.joinable())
      worker_.join();
  }

  native_run(const native_run&) = delete;
  native_run& operator=(const native_run&) = delete;

  /// Absolute; the folder claimed (kept by cmd_, as run_->dir is let go when the run ends).
  std::string folder() const { return cmd_.out; }
  std::string plan_text() const { return render_plan(run_->plan); }

  /// Waits up to `seconds` for the run to end; true when it has.
  bool wait(double seconds) {
    PyThreadState* const state = PyEval_SaveThread();
    bool ended = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ended = changed_.wait_for(lock, std::chrono::duration<double>(seconds),
                                [this] { return result_.has_value(); });
    }
    // A daemon thread waiting here while the interpreter exits: taking the GIL back would end
    // this thread by unwinding it through C++ frames that cannot be unwound (std::terminate, the
    // process aborted mid-run). It is parked instead; the atexit handler of python/troupe has
    // stopped the run and waited for its folder to be whole. Not the main thread, which is the
    // one finalizing (a `with` block closed then waits here) and goes on.
    while (interpreter_finalizing() && PyThread_get_thread_ident() != main_thread_ident)
      std::this_thread::sleep_for(std::chrono::hours(1));
    PyEval_RestoreThread(state);
    return ended;
  }

  void stop() { stop_.store(true); }

  bool done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_.has_value();
  }

  /// Why summary.json could not be written ("" when it was); only once done.
  std::string summary_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_ ? result_->summary_error : std::string();
  }

 private:
  run_command cmd_;
  std::optional<single_run> run_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<single_run_result> result_;  ///< once the run has ended
  std::thread worker_;
};

std::string plan_of(const std::string& job_text, const std::string& job_path,
                    const std::vector<std::string>& sets) {
  py::gil_scoped_release unlocked;
  const auto request = single_job_request(job_text, job_path, sets, "validate");
  const auto job = parse_loaded_job(request.source, request.json);
  // The data files' headers, as `troupe validate` reads them: a missing file is found now.
  return render_plan(make_run_plan(job, read_data_facts(job.data)));
}

// A weights file troupe wrote (final_weights.pt, member_K.pt), read by troupe's checked reader
// of pickled tensors, not by torch.load: torch.load unpickles whatever a file holds, and a run
// folder copied from elsewhere could run code in the reader's process. Each tensor as (name,
// dtype, shape, raw bytes) for Python to view as a torch tensor.
py::list read_weights(const std::string& path) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  try {
    named = load_weights(path);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw py::value_error(what.compare(0, path.size(), path) == 0 ? what : path + ": " + what);
  }
  py::list out;
  for (const auto& [name, tensor] : named) {
    const auto t = tensor.contiguous();
    // PyTorch's names of the dtypes troupe writes.
    static const std::map<at::ScalarType, const char*> dtype_names = {
        {at::kFloat, "float32"},     {at::kDouble, "float64"}, {at::kHalf, "float16"},
        {at::kBFloat16, "bfloat16"}, {at::kLong, "int64"},     {at::kInt, "int32"},
        {at::kByte, "uint8"},        {at::kBool, "bool"}};
    const auto dtype = dtype_names.find(t.scalar_type());
    if (dtype == dtype_names.end())
      throw py::value_error(path + ": tensor " + name + " is " +
                            std::string(c10::toString(t.scalar_type())) +
                            ", not a type troupe writes");
    out.append(py::make_tuple(
        name, dtype->second, t.sizes().vec(),
        py::bytes(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size())));
  }
  return out;
}

bool is_suite_job(const std::string& job_text, const std::string& job_path) {
  py::gil_scoped_release unlocked;
  return is_suite(request_of(job_text, job_path, {}).json);
}

}  // namespace
}  // namespace troupe

PYBIND11_MODULE(_native, m) {
  m.doc() = "troupe's runs in this process (use the troupe package, not this module)";
  troupe::main_thread_ident =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  // Problems with the job (every one, each naming its key) or with a data file read to plan.
  static py::exception<troupe::job_error> job_error(m, "JobError", PyExc_ValueError);
  static py::exception<troupe::data_error> data_error(m, "DataError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const troupe::job_error& e) {
      std::string text;
      for (const auto& problem : e.problems())
        text += (text.empty() ? "" : "\n") + problem;
      job_error(text.c_str());
    } catch (const troupe::data_error& e) {
      data_error(e.what());
    }
  });
  py::class_<troupe::native_run>(m, "Run")
      .def(py::init<const std::string&, const std::string&, const std::vector<std::string>&,
                    const std::string&, bool>(),
           py::arg("job_text"), py::arg("job_path"), py::arg("sets"), py::arg("out"),
           py::arg("force"))
      .def_property_readonly("folder", &troupe::native_run::folder)
      .def_property_readonly("plan", &troupe::native_run::plan_text)
      .def("wait", &troupe::native_run::wait, py::arg("seconds"))
      .def("stop", &troupe::native_run::stop)
      .def("done", &troupe::native_run::done)
      .def("summary_error", &troupe::native_run::summary_error);
  m.def("validate", &troupe::plan_of, py::arg("job_text"), py::arg("job_path"), py::arg("sets"));
  m.def("is_suite", &troupe::is_suite_job, py::arg("job_text"), py::arg("job_path"));
  m.def("read_weights", &troupe::read_weights, py::arg("path"));
  m.attr("version") = TROUPE_VERSION;
  m.attr("binary_candidates") =
      std::vector<std::string>{TROUPE_BUILD_BINARY, TROUPE_INSTALLED_BINARY};
}
