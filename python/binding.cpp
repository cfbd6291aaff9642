// binding.cpp: gknn._gknn, the compiled half of the Python package (the user-facing API is gknn/__init__.py).
//
// Every entry point takes already-normalised arguments from the Python layer (gknn's metric names, float32 or
// uint8 buffers with contiguous rows), releases the GIL for the search, and lets Ctrl-C stop it between
// batches through the progress callback. gknn::Error maps to the Python exception of its code.
#include <optional>
#include <string>

#include "arrays.hpp"
#include "gknn/gknn.hpp"

namespace gknn::python {
namespace {

/// Thrown by the progress callback when a signal handler raised (Ctrl-C): unwinds the search, and is turned
/// back into the pending Python exception once the GIL is held again.
struct Interrupted {};

void check_signals(double) {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

/// Runs `work` without the GIL; a Ctrl-C during it surfaces as the KeyboardInterrupt it raised.
template <class Work>
auto without_gil(Work&& work) {
  try {
    py::gil_scoped_release release;
    return work();
  } catch (const Interrupted&) {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

py::tuple result_tuple(Result&& r) {
  const int64_t rows = r.rows, k = r.k;
  return py::make_tuple(to_numpy(std::move(r.distances), rows, k), to_numpy(std::move(r.indices), rows, k));
}

struct Options {
  std::string distance = "auto";
  std::string select = "auto";
  int threads = 0;
  size_t memory_budget = 0;
  int device = 0;
  std::string guard = "auto";
};

SearchParams search_params(int64_t k, const std::string& metric, double p, const std::string& backend,
                           const Options& o) {
  SearchParams params;
  params.k = k;
  params.metric = parse_metric(metric);
  params.p = p;
  params.backend = parse_backend(backend);
  params.distance = parse_distance(o.distance);
  params.select = parse_select(o.select, &params.select_options.tang);
  params.threads = o.threads;
  params.memory_budget = o.memory_budget;
  params.device = o.device;
  params.guard = parse_guard(o.guard);
  params.progress = check_signals;
  return params;
}

py::tuple search(const py::buffer& base_buffer, const py::buffer& query_buffer, int64_t k, const std::string& metric,
                 double p, const std::string& backend, const Options& options) {
  const HostMatrix base(base_buffer, "base"), queries(query_buffer, "queries");
  GKNN_EXPECT(base.is_bytes() == queries.is_bytes(), ErrorCode::InvalidArgument,
              "base and queries must have the same element type (float32 or uint8)");
  const SearchParams params = search_params(k, metric, p, backend, options);
  return result_tuple(without_gil([&] {
    return base.is_bytes() ? gknn::search(base.bytes(), queries.bytes(), params)
                           : gknn::search(base.floats(), queries.floats(), params);
  }));
}

/// explain_search on host arrays: what gknn.search would run and why.
py::dict explain(const py::buffer& base_buffer, const py::buffer& query_buffer, int64_t k, const std::string& metric,
                 double p, const std::string& backend, const Options& options) {
  const HostMatrix base(base_buffer, "base"), queries(query_buffer, "queries");
  GKNN_EXPECT(!base.is_bytes() && !queries.is_bytes(), ErrorCode::InvalidArgument,
              "explain: base and queries must be float32 (the Python layer converts uint8)");
  const SearchPlan plan = explain_search(base.floats(), queries.floats(), search_params(k, metric, p, backend, options));
  py::dict out;
  out["backend"] = to_string(plan.backend.backend);
  out["backend_reason"] = plan.backend.reason;
  out["distance"] = to_string(plan.distance);
  out["distance_reason"] = plan.distance_reason;
  out["select"] = plan.selects_itself ? std::string("none") : to_string(plan.select);  // as `gknn --explain` prints
  out["select_reason"] = plan.select_reason;
  out["guard"] = plan.guarded ? "re-rank" : "none";
  out["guard_reason"] = plan.guard_reason;
  return out;
}

SelectParams select_params(const std::string& backend, const std::string& algorithm, int threads, int device) {
  SelectParams params;
  params.backend = parse_backend(backend);
  params.algorithm = parse_select(algorithm, &params.options.tang);
  params.threads = threads;
  params.device = device;
  return params;
}

py::tuple select_k(const py::buffer& values_buffer, const py::object& labels_buffer, int64_t k,
                   bool largest, const std::string& backend, const std::string& algorithm, int threads) {
  const HostMatrix values(values_buffer, "values");
  const int64_t* labels = nullptr;
  std::optional<py::buffer_info> label_info;
  if (!labels_buffer.is_none()) {
    label_info = py::reinterpret_borrow<py::buffer>(labels_buffer).request();
    GKNN_EXPECT(label_info->ndim == 2 && label_info->shape[0] == values.rows() &&
                    label_info->shape[1] == values.cols(),
                ErrorCode::InvalidArgument, "labels: must have the shape of values");
    GKNN_EXPECT(label_info->itemsize == 8 && (label_info->format == "l" || label_info->format == "q"),
                ErrorCode::InvalidArgument, "labels: expected int64");
    GKNN_EXPECT(values.rows() <= 1 || label_info->strides[0] == values.floats().row_stride() * 8,
                ErrorCode::InvalidArgument, "labels: must have the row stride of values (in elements)");
    labels = static_cast<const int64_t*>(label_info->ptr);
  }
  const SelectParams params = select_params(backend, algorithm, threads, 0);
  return result_tuple(without_gil([&] {
    return gknn::select_k(values.floats(), labels, k, largest ? Order::Descending : Order::Ascending, params);
  }));
}

/// CUDA tensors are searched where they are: device-memory views in, device-memory ResultView out (the C++
/// overload of issue 21), no host copy. The search is synchronous: the outputs are complete when it returns.
constexpr bool kDeviceArraysInPlace = true;

/// A float32 device tensor as a device-memory view.
FloatView device_floats(const DeviceMatrix& m, const char* what) {
  GKNN_EXPECT(m.dtype == "float32", ErrorCode::InvalidArgument, what, ": device tensors must be float32 (got ", m.dtype,
              ")");
  return FloatView{reinterpret_cast<const float*>(m.data), m.rows, m.cols, m.row_stride, Memory::Device};
}

void search_device(const DeviceMatrix& base, const DeviceMatrix& queries, const SearchParams& params,
                   uintptr_t distances, uintptr_t indices) {
  GKNN_EXPECT(base.dtype == "float32" && queries.dtype == "float32", ErrorCode::InvalidArgument,
              "device tensors must be float32 (base ", base.dtype, ", queries ", queries.dtype, ")");
  const ResultView out{reinterpret_cast<float*>(distances), reinterpret_cast<int64_t*>(indices), queries.rows,
                       params.k, Memory::Device};
  without_gil([&] { gknn::search(device_floats(base, "base"), device_floats(queries, "queries"), params, out); });
}

DeviceMatrix device_matrix(const py::dict& d, const char* what);

/// select_k of a CUDA tensor where it is, into the caller's device outputs (rows x k each); synchronous.
/// `labels`: None or a device int64 tensor of the values' shape, row stride and device.
void select_k_device(const py::dict& values_desc, const py::object& labels_desc, int64_t k, bool largest,
                     const std::string& backend, const std::string& algorithm, uintptr_t distances,
                     uintptr_t indices) {
  const DeviceMatrix values = device_matrix(values_desc, "values");
  const int64_t* labels = nullptr;
  if (!labels_desc.is_none()) {
    const DeviceMatrix l = device_matrix(labels_desc.cast<py::dict>(), "labels");
    GKNN_EXPECT(l.dtype == "int64", ErrorCode::InvalidArgument, "labels: expected int64 (got ", l.dtype, ")");
    GKNN_EXPECT(l.rows == values.rows && l.cols == values.cols, ErrorCode::InvalidArgument, "labels: shape ", l.rows,
                " x ", l.cols, " differs from the values' ", values.rows, " x ", values.cols);
    GKNN_EXPECT(l.device == values.device, ErrorCode::InvalidArgument, "labels are on cuda:", l.device,
                ", values on cuda:", values.device);
    GKNN_EXPECT(values.rows <= 1 || l.row_stride == values.row_stride, ErrorCode::InvalidArgument,
                "labels: must have the row stride of values (", values.row_stride, " elements, got ", l.row_stride, ")");
    labels = reinterpret_cast<const int64_t*>(l.data);
  }
  const SelectParams params = select_params(backend, algorithm, 0, values.device);
  const ResultView out{reinterpret_cast<float*>(distances), reinterpret_cast<int64_t*>(indices), values.rows, k,
                       Memory::Device};
  const FloatView v = device_floats(values, "values");
  without_gil([&] { gknn::select_k(v, labels, k, largest ? Order::Descending : Order::Ascending, params, out); });
}

DeviceMatrix device_matrix(const py::dict& d, const char* what) {
  DeviceMatrix m;
  m.data = d["data"].cast<uintptr_t>();
  const auto shape = d["shape"].cast<py::tuple>();
  GKNN_EXPECT(shape.size() == 2, ErrorCode::InvalidArgument, what, ": expected a 2-D tensor");
  m.rows = shape[0].cast<int64_t>();
  m.cols = shape[1].cast<int64_t>();
  m.row_stride = d["row_stride"].cast<int64_t>();
  m.dtype = d["dtype"].cast<std::string>();
  m.device = d["device_id"].cast<int>();
  return m;
}

// ---- Index --------------------------------------------------------------------------------------------------

class PyIndex {
 public:
  PyIndex(int64_t dim, const std::string& metric, double p, const std::string& backend)
      : index_(dim, parse_metric(metric), parse_backend(backend)) {
    if (index_.metric() == Metric::Lp) index_.set_p(p);
  }
  /// uint8 rows go to Index::add(ByteView): a cuda index uploads the bytes (a quarter of the traffic) and widens
  /// them on the device.
  void add(const py::buffer& vectors) {
    const HostMatrix m(vectors, "vectors");
    without_gil([&] { m.is_bytes() ? index_.add(m.bytes()) : index_.add(m.floats()); });
  }
  void add_with_ids(const py::buffer& vectors, const py::buffer& ids) {
    const HostMatrix m(vectors, "vectors");
    const py::buffer_info id_info = ids.request();
    const int64_t* id_data = int64_data(id_info, m.rows(), "ids");
    without_gil([&] {
      m.is_bytes() ? index_.add_with_ids(m.bytes(), id_data) : index_.add_with_ids(m.floats(), id_data);
    });
  }
  /// Device-memory rows (a CUDA tensor) copied device to device into a cuda-backend index; `ids` (host int64,
  /// or None) as add_with_ids takes them.
  void add_device(const py::dict& vectors, const py::object& ids) {
    const DeviceMatrix m = device_matrix(vectors, "vectors");
    if (ids.is_none()) return without_gil([&] { index_.add(device_floats(m, "vectors")); });
    const py::buffer_info id_info = py::reinterpret_borrow<py::buffer>(ids).request();
    const int64_t* id_data = int64_data(id_info, m.rows, "ids");
    without_gil([&] { index_.add_with_ids(device_floats(m, "vectors"), id_data); });
  }
  py::tuple search(const py::buffer& queries, int64_t k, const Options& options) const {
    const HostMatrix q(queries, "queries");
    const SearchParams params = index_params(k, options);
    return result_tuple(without_gil([&] { return index_.search(q.floats(), params); }));
  }
  /// Device-memory queries, results written into the caller's device buffers (q x k each); synchronous.
  void search_device(const py::dict& queries, int64_t k, const Options& options, uintptr_t distances,
                     uintptr_t indices) const {
    const DeviceMatrix q = device_matrix(queries, "queries");
    const SearchParams params = index_params(k, options);
    const ResultView out{reinterpret_cast<float*>(distances), reinterpret_cast<int64_t*>(indices), q.rows, k,
                         Memory::Device};
    without_gil([&] { index_.search(device_floats(q, "queries"), params, out); });
  }
  void reset() { index_.reset(); }
  int64_t ntotal() const { return index_.size(); }
  int64_t dimension() const { return index_.dimension(); }
  std::string metric() const { return to_string(index_.metric()); }
  std::string backend() const { return to_string(index_.backend()); }

 private:
  SearchParams index_params(int64_t k, const Options& options) const {
    SearchParams params = search_params(k, to_string(index_.metric()), 2.0, to_string(index_.backend()), options);
    params.metric = Metric::SquaredL2;  // "the index metric" (Index::search takes its own metric and p)
    return params;
  }

  Index index_;
};

// ---- info ---------------------------------------------------------------------------------------------------

py::dict backend_info(Backend backend) {
  py::dict distance;
  for (Metric m : {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine, Metric::L1, Metric::Linf,
                   Metric::Lp}) {
    py::list names;
    for (DistanceAlgorithm a : compiled_distance_algorithms(backend, m)) names.append(to_string(a));
    distance[py::str(to_string(m))] = names;
  }
  py::dict select;
  for (const SelectCapability& s : compiled_select_algorithms(backend)) select[py::str(to_string(s.algorithm))] = s.max_k;
  py::dict out;
  out["compiled"] = backend_compiled(backend);
  out["available"] = backend_available(backend);
  out["distance"] = distance;
  out["select"] = select;
  return out;
}

py::dict info() {
  const BuildInfo b = build_info();
  py::dict build;
  build["version"] = b.version;
  build["cuda"] = b.cuda;
  build["cuda_archs"] = b.cuda_archs;
  build["openmp"] = b.openmp;
  build["blas"] = b.blas;
  build["hdf5"] = b.hdf5;
  build["join_kdtree"] = b.join_kdtree;
  build["compiler"] = b.compiler;
  build["build_type"] = b.build_type;
  build["dlpack"] = has_dlpack();
  build["device_arrays"] = kDeviceArraysInPlace;
  py::list devices;
  for (const DeviceInfo& d : cuda_devices()) {
    py::dict dev;
    dev["ordinal"] = d.ordinal;
    dev["name"] = d.name;
    dev["compute_capability"] = py::make_tuple(d.major, d.minor);
    dev["multiprocessors"] = d.multiprocessors;
    dev["global_memory"] = d.global_memory;
    dev["free_memory"] = d.free_memory;
    devices.append(dev);
  }
  py::dict backends;
  backends["cpu"] = backend_info(Backend::Cpu);
  backends["cuda"] = backend_info(Backend::Cuda);
  py::dict out;
  out["version"] = b.version;
  out["build"] = build;
  out["cpu"] = cpu_description();
  out["cuda_devices"] = devices;
  out["backends"] = backends;
  return out;
}

void translate_errors() {
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;  // Cuda, Internal
      switch (e.code()) {
        case ErrorCode::InvalidArgument:
        case ErrorCode::Format: type = PyExc_ValueError; break;
        case ErrorCode::Io: type = PyExc_OSError; break;
        case ErrorCode::OutOfMemory: type = PyExc_MemoryError; break;
        case ErrorCode::Unsupported: type = PyExc_NotImplementedError; break;
        case ErrorCode::Cuda:
        case ErrorCode::Internal: break;
      }
      PyErr_SetString(type, e.what());
    }
  });
}

}  // namespace
}  // namespace gknn::python

PYBIND11_MODULE(_gknn, m) {
  using namespace gknn::python;
  namespace py = pybind11;
  m.doc() = "gknn's compiled core; use the gknn package, whose functions normalise their arguments first.";
  translate_errors();
  m.attr("__version__") = gknn::build_info().version;  // without info(), which opens a context on every device

  py::class_<Options>(m, "_Options")
      .def(py::init<>())
      .def_readwrite("distance", &Options::distance)
      .def_readwrite("select", &Options::select)
      .def_readwrite("threads", &Options::threads)
      .def_readwrite("memory_budget", &Options::memory_budget)
      .def_readwrite("device", &Options::device)
      .def_readwrite("guard", &Options::guard);

  m.def("search", &search, py::arg("base"), py::arg("queries"), py::arg("k"), py::arg("metric"), py::arg("p"),
        py::arg("backend"), py::arg("options"));
  m.def("explain", &explain, py::arg("base"), py::arg("queries"), py::arg("k"), py::arg("metric"), py::arg("p"),
        py::arg("backend"), py::arg("options"));
  m.def("select_k", &select_k, py::arg("values"), py::arg("labels"), py::arg("k"), py::arg("largest"),
        py::arg("backend"), py::arg("algorithm"), py::arg("threads"));
  m.def(
      "search_device",
      [](const py::dict& base, const py::dict& queries, int64_t k, const std::string& metric, double p,
         const std::string& backend, const Options& options, uintptr_t out_distances, uintptr_t out_indices) {
        search_device(device_matrix(base, "base"), device_matrix(queries, "queries"),
                      search_params(k, metric, p, backend, options), out_distances, out_indices);
      },
      py::arg("base"), py::arg("queries"), py::arg("k"), py::arg("metric"), py::arg("p"), py::arg("backend"),
      py::arg("options"), py::arg("out_distances"), py::arg("out_indices"));
  m.def("select_k_device", &select_k_device, py::arg("values"), py::arg("labels"), py::arg("k"), py::arg("largest"),
        py::arg("backend"), py::arg("algorithm"), py::arg("out_distances"), py::arg("out_indices"));
  m.def("describe_dlpack", &describe_dlpack, py::arg("capsule"));
  m.def("info", &info);

  py::class_<PyIndex>(m, "Index")
      .def(py::init<int64_t, const std::string&, double, const std::string&>(), py::arg("dim"), py::arg("metric"),
           py::arg("p"), py::arg("backend"))
      .def("add", &PyIndex::add, py::arg("vectors"))
      .def("add_with_ids", &PyIndex::add_with_ids, py::arg("vectors"), py::arg("ids"))
      .def("add_device", &PyIndex::add_device, py::arg("vectors"), py::arg("ids"))
      .def("search", &PyIndex::search, py::arg("queries"), py::arg("k"), py::arg("options"))
      .def("search_device", &PyIndex::search_device, py::arg("queries"), py::arg("k"), py::arg("options"),
           py::arg("out_distances"), py::arg("out_indices"))
      .def("reset", &PyIndex::reset)
      .def_property_readonly("ntotal", &PyIndex::ntotal)
      .def_property_readonly("d", &PyIndex::dimension)
      .def_property_readonly("metric", &PyIndex::metric)
      .def_property_readonly("backend", &PyIndex::backend);
}
