// The adapter between a library built from a quantum program and Catalyst's
// runtime (librt_capi.so of pennylane-catalyst 0.15.0, whose C API this file
// declares). The build compiles it once (the same object for every library:
// crates/native/src/link.rs keeps it by the hash of this text) and links it
// into each quantum library, with the named gates' declarations and dispatch
// generated from the lowering's gate table in place of the GATE lines. The
// library's exported entry point calls `jx_q_run` with its generated body.
//
// What it adds to the runtime's functions, each a `jx_q_*` the generated code
// calls:
// - one call at a time (the runtime keeps its execution context in a global:
//   `__catalyst__rt__initialize` replaces it), each call inside
//   initialize/finalize as Catalyst's own `setup`/`teardown` do, so that a
//   seeded call samples as qjit's does;
// - the runtime's errors (C++ exceptions) turned into a status and a message,
//   and sizes checked before the runtime writes into the library's buffers;
// - what a failed call leaves (registers, an active device) released;
// - `adjoint` regions: gates recorded, then applied reversed and adjoint;
// - derivatives of a circuit by the adjoint method: the runtime's recorder on
//   while the circuit runs, each executed gate parameter's tangent kept here,
//   and the expectation values' Jacobian from `__catalyst__qis__Gradient`
//   contracted with them (what Catalyst's `AdjointOp` lowering calls);
// - derivatives by parameter-shift: one executed gate parameter moved by
//   +-pi/2 while the circuit runs again (Catalyst's shifted function).
#include <dlfcn.h>

#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

struct QUBIT;
struct Modifiers {
    bool adjoint;
    size_t num_controlled;
    QUBIT *controlled_wires;
    bool *controlled_values;
};
// The runtime's MemRef descriptors (MemRefT_* in Types.h), by element and rank.
template <typename T, int R> struct MemRef {
    T *allocated;
    T *aligned;
    size_t offset;
    size_t sizes[R];
    size_t strides[R];
};
struct CountsPair {
    MemRef<double, 1> eigvals;
    MemRef<int64_t, 1> counts;
};
extern "C" {
void __catalyst__rt__initialize(uint32_t *);
void __catalyst__rt__finalize();
void __catalyst__rt__device_init(int8_t *, int8_t *, int8_t *, int64_t, bool);
void __catalyst__rt__device_release();
int64_t __catalyst__rt__array_get_size_1d(void *);
int8_t *__catalyst__rt__array_get_element_ptr_1d(void *, int64_t);
void *__catalyst__rt__qubit_allocate_array(int64_t);
void __catalyst__rt__qubit_release_array(void *);
void __catalyst__rt__qubit_release(QUBIT *);
int64_t __catalyst__rt__num_qubits();
void __catalyst__qis__GlobalPhase(double, const Modifiers *);
void __catalyst__qis__SetState(MemRef<std::complex<double>, 1> *, uint64_t, ...);
void __catalyst__qis__SetBasisState(MemRef<int8_t, 1> *, uint64_t, ...);
void __catalyst__qis__QubitUnitary(MemRef<std::complex<double>, 2> *, const Modifiers *, int64_t, ...);
intptr_t __catalyst__qis__NamedObs(int64_t, QUBIT *);
intptr_t __catalyst__qis__HermitianObs(MemRef<std::complex<double>, 2> *, int64_t, ...);
intptr_t __catalyst__qis__TensorObs(int64_t, ...);
intptr_t __catalyst__qis__HamiltonianObs(MemRef<double, 1> *, int64_t, ...);
bool *__catalyst__qis__Measure(QUBIT *, int32_t);
double __catalyst__qis__Expval(intptr_t);
double __catalyst__qis__Variance(intptr_t);
void __catalyst__qis__Probs(MemRef<double, 1> *, int64_t, ...);
void __catalyst__qis__State(MemRef<std::complex<double>, 1> *, int64_t, ...);
void __catalyst__qis__Sample(MemRef<double, 2> *, int64_t, ...);
void __catalyst__qis__Counts(CountsPair *, int64_t, ...);
void __catalyst__rt__toggle_recorder(bool);
void __catalyst__qis__Gradient(int64_t, ...);
// GATE DECLARATIONS
}

namespace {

// The runtime's variadic functions read as many operands as their count says;
// passing more is allowed (C11 7.16.1.1), so every variadic call passes this
// many and the count says how many are used.
constexpr int64_t MAX_OPERANDS = 64;
#define JX_ARGS(a)                                                                                 \
    a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],  \
        a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], \
        a[28], a[29], a[30], a[31], a[32], a[33], a[34], a[35], a[36], a[37], a[38], a[39], a[40], \
        a[41], a[42], a[43], a[44], a[45], a[46], a[47], a[48], a[49], a[50], a[51], a[52], a[53], \
        a[54], a[55], a[56], a[57], a[58], a[59], a[60], a[61], a[62], a[63]

thread_local char message[512];

// Every failure: its message (printf's format) kept for `jx_q_error`, and
// the status 1.
__attribute__((format(printf, 1, 2))) int fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return 1;
}

// A status 1 when `n` operands of `what` are more than a variadic call
// passes.
int too_many(int64_t n, const char *what)
{
    return n > MAX_OPERANDS ? fail("%s with %lld operands (at most %lld)", what, (long long)n, (long long)MAX_OPERANDS) : 0;
}

// A gate as an adjoint region records it.
struct Gate {
    enum Kind { Named, Unitary, Phase } kind;
    const char *op; // a constant of the library: lives as long as the call
    std::vector<double> params;
    std::vector<QUBIT *> qubits;
    std::vector<QUBIT *> controls;
    std::vector<bool> control_values;
    std::vector<std::complex<double>> matrix;
    bool adjoint;
};

// The state of the one call running (calls hold `runtime_lock`).
std::vector<void *> registers;
bool device_active = false;
int64_t device_shots = 0;
std::vector<std::vector<Gate>> recordings;
// What `probs`, `sample`, `counts` (and, for mid-circuit measurement
// results, `expval` and `var`) measure besides the runtime's observables:
// a computational basis (the qubits, none for the whole device) or
// mid-circuit measurement results (`mcmobs`). By handle -1, -2, ... (the
// runtime's observables are 0, 1, ...).
struct Basis {
    std::vector<QUBIT *> qubits;
    bool of_outcomes;
    std::vector<int64_t> outcomes;
};
std::vector<Basis> bases;

// A kernel run one shot at a time, as Catalyst's `dynamic-one-shot` pass
// runs one (mcm_method="one-shot"): the body runs `shots` times, each on a
// device of one shot (the number of shots is learnt from the first
// `device_init`), and its results are combined across shots.
enum Combine { Mean = 0, VarianceOfBits = 1, Last = 2, Sum = 3 };
struct OneShot {
    bool active = false;
    int64_t shots = -1;
    std::vector<std::vector<double>> sums;
};
OneShot one_shot;
// While a circuit is differentiated (the runtime's recorder on): the tangent
// of every gate parameter the runtime has executed, in its order (0 unless
// the library sets it).
bool taping = false;
std::vector<double> tape_tangents;
// Parameter-shift (Catalyst's `ParameterShiftLowering`): the executed gate
// parameter `index` (counted in the order the gates run, as the tangents
// are) moved by `by` while the circuit runs again; `seen` counts the
// parameters this run has executed, `expected` how many the unshifted run
// did (a shifted run that executes others is an error, not a derivative).
struct Shift {
    int64_t index = -1;
    double by = 0.0;
    int64_t seen = 0;
    int64_t expected = 0;
};
Shift shift;

bool named_gate(const char *op, const double *p, QUBIT *const *q, int64_t n, const Modifiers *m)
{
    // GATES
    return false;
}

int execute(const Gate &g)
{
    bool values[MAX_OPERANDS];
    for (size_t k = 0; k < g.controls.size(); k++) {
        values[k] = g.control_values[k];
    }
    Modifiers m{g.adjoint, g.controls.size(),
                reinterpret_cast<QUBIT *>(const_cast<QUBIT **>(g.controls.data())), values};
    if (taping && g.kind != Gate::Unitary) {
        tape_tangents.resize(tape_tangents.size() + g.params.size(), 0.0);
    }
    std::vector<double> params = g.params;
    if (shift.index >= 0 && g.kind != Gate::Unitary) {
        int64_t first = shift.seen;
        shift.seen += int64_t(params.size());
        if (shift.index >= first && shift.index < shift.seen) {
            params[size_t(shift.index - first)] += shift.by;
        }
    }
    switch (g.kind) {
    case Gate::Phase:
        __catalyst__qis__GlobalPhase(params[0], &m);
        return 0;
    case Gate::Unitary: {
        QUBIT *q[MAX_OPERANDS] = {};
        std::copy(g.qubits.begin(), g.qubits.end(), q);
        size_t side = size_t(1) << g.qubits.size();
        auto *data = const_cast<std::complex<double> *>(g.matrix.data());
        MemRef<std::complex<double>, 2> matrix{data, data, 0, {side, side}, {side, 1}};
        __catalyst__qis__QubitUnitary(&matrix, &m, int64_t(g.qubits.size()), JX_ARGS(q));
        return 0;
    }
    case Gate::Named: {
        QUBIT *q[MAX_OPERANDS] = {};
        std::copy(g.qubits.begin(), g.qubits.end(), q);
        if (!named_gate(g.op, params.data(), q, int64_t(g.qubits.size()), &m)) {
            return fail("the gate `%s` on %zu qubit(s) is not in Catalyst's runtime",
                     g.op, g.qubits.size());
        }
        return 0;
    }
    }
    return 0;
}

int apply(Gate &&g)
{
    if (!recordings.empty()) {
        recordings.back().push_back(std::move(g));
        return 0;
    }
    return execute(g);
}

// Runs `body`, turning the runtime's exceptions into a status and a message.
template <typename F> int guarded(F body)
{
    try {
        return body();
    }
    catch (const std::exception &e) {
        return fail("%s", e.what());
    }
    catch (...) {
        return fail("Catalyst's runtime failed without a message");
    }
}

QUBIT *qubit(int64_t handle) { return reinterpret_cast<QUBIT *>(intptr_t(handle)); }

bool known_register(void *r)
{
    for (void *x : registers) {
        if (x == r) {
            return true;
        }
    }
    return false;
}

void *register_of(int64_t handle) { return reinterpret_cast<void *>(intptr_t(handle)); }

// Status 0 when `r` is a live register holding wire `index`; else a failure
// saying what `what` (the operation) found.
int check_wire(void *r, int64_t index, const char *what)
{
    if (!known_register(r)) {
        return fail("%s a register that was released", what);
    }
    int64_t size = __catalyst__rt__array_get_size_1d(r);
    if (index < 0 || index >= size) {
        return fail("wire %lld is outside the register of %lld qubit(s)", (long long)index, (long long)size);
    }
    return 0;
}

// The basis of a handle; null for the runtime's observables.
const Basis *basis_of(int64_t handle)
{
    int64_t k = -handle - 1;
    if (handle >= 0 || k >= int64_t(bases.size())) {
        return nullptr;
    }
    return &bases[size_t(k)];
}

// The index of mid-circuit measurement outcomes as a basis state, the first
// outcome the most significant bit (as Catalyst's one-shot `probs`).
size_t outcome_index(const Basis &b)
{
    size_t index = 0;
    for (int64_t o : b.outcomes) {
        index = (index << 1) | size_t(o != 0);
    }
    return index;
}

int not_one_shot(void)
{
    return fail("a measurement of mid-circuit measurement results outside a kernel run one shot at a "
                "time (mcm_method=\"one-shot\")");
}

int64_t device_qubits() { return __catalyst__rt__num_qubits(); }

} // namespace

extern "C" {

// The lock of Catalyst's runtime, one per process: every quantum library
// loaded (each with its own copy of this adapter) and its threads share it,
// since they share the one librt_capi.so and its global execution context.
// The first library loaded allocates it; each library publishes its address
// here, and puts itself in the global scope so that the next one finds it.
// It counts the libraries holding it, and the last one unloaded frees it
// (whichever that is: a library unloaded must not take it from the others).
// Its symbol's name is not the bare mutex's that libraries of earlier
// releases publish (`jaxpr_catalyst_runtime_lock`), whose layout differs.
// Library constructors and destructors run one at a time, under the dynamic
// loader's lock.
struct RuntimeLock {
    std::mutex mutex;
    int64_t libraries;
};
__attribute__((visibility("default"))) RuntimeLock *jaxpr_catalyst_runtime_lock_counted = nullptr;
// This library's own published word. A write to the exported name goes
// through the GOT, which binds to the first library in the global scope that
// defines it: a second library's constructor would then publish in the
// first's word and leave its own empty, and its destructor would empty the
// first's, so that a library loaded later makes a lock of its own and two
// calls run on the runtime at once. Writes go through this hidden alias.
extern RuntimeLock *own_published_lock
    __attribute__((alias("jaxpr_catalyst_runtime_lock_counted"), visibility("hidden")));
static RuntimeLock *runtime_lock = nullptr;

__attribute__((constructor)) static void find_runtime_lock(void)
{
    auto *published = static_cast<RuntimeLock **>(dlsym(RTLD_DEFAULT, "jaxpr_catalyst_runtime_lock_counted"));
    if (published && *published) {
        runtime_lock = *published;
        runtime_lock->libraries++;
    }
    else {
        runtime_lock = new RuntimeLock{{}, 1};
    }
    own_published_lock = runtime_lock;
    Dl_info self;
    if (dladdr(reinterpret_cast<void *>(&find_runtime_lock), &self) && self.dli_fname) {
        // Held once more (RTLD_NOLOAD), released at once: only the scope changes.
        if (void *h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
            dlclose(h);
        }
    }
}

__attribute__((destructor)) static void release_runtime_lock(void)
{
    if (--runtime_lock->libraries == 0) {
        delete runtime_lock;
    }
    runtime_lock = nullptr;
    own_published_lock = nullptr;
}

const char *jx_q_error(void) { return message; }

int32_t jx_q_device_init(const char *lib, const char *name, const char *kwargs, int64_t shots,
                         int8_t auto_qubits)
{
    if (shots < 0) {
        return fail("the number of shots is %lld; it must be at least 0",
                 (long long)shots);
    }
    if (device_active) {
        return fail("a device is already active (device_init twice without device_release)");
    }
    if (one_shot.active) {
        if (shots == 0) {
            return fail("a kernel run one shot at a time (mcm_method=\"one-shot\") on a device "
                        "without shots");
        }
        if (one_shot.shots < 0) {
            one_shot.shots = shots;
        }
        shots = 1;
    }
    return guarded([&] {
        __catalyst__rt__device_init((int8_t *)lib, (int8_t *)name, (int8_t *)kwargs, shots,
                                    auto_qubits != 0);
        device_active = true;
        device_shots = shots;
        return 0;
    });
}

int32_t jx_q_device_release(void)
{
    return guarded([&] {
        if (device_active) {
            __catalyst__rt__device_release();
            device_active = false;
        }
        return 0;
    });
}

int32_t jx_q_alloc(int64_t n, int64_t *out)
{
    if (n < 0 || n > 1024) {
        return fail("cannot allocate %lld qubits", (long long)n);
    }
    if (!device_active) {
        return fail("qubits are allocated before a device is initialised");
    }
    return guarded([&] {
        void *r = __catalyst__rt__qubit_allocate_array(n);
        registers.push_back(r);
        *out = int64_t(intptr_t(r));
        return 0;
    });
}

int32_t jx_q_dealloc(int64_t reg)
{
    void *r = register_of(reg);
    if (!known_register(r)) {
        return fail("a register is released twice or was never allocated");
    }
    return guarded([&] {
        for (size_t k = 0; k < registers.size(); k++) {
            if (registers[k] == r) {
                registers.erase(registers.begin() + long(k));
                break;
            }
        }
        __catalyst__rt__qubit_release_array(r);
        return 0;
    });
}

int32_t jx_q_extract(int64_t reg, int64_t index, int64_t *out)
{
    void *r = register_of(reg);
    if (check_wire(r, index, "a qubit is taken from")) {
        return 1;
    }
    return guarded([&] {
        *out = *reinterpret_cast<int64_t *>(__catalyst__rt__array_get_element_ptr_1d(r, index));
        return 0;
    });
}

int32_t jx_q_insert(int64_t reg, int64_t index)
{
    return check_wire(register_of(reg), index, "a qubit is put back into");
}

int32_t jx_q_release_qubit(int64_t q)
{
    return guarded([&] {
        __catalyst__rt__qubit_release(qubit(q));
        return 0;
    });
}

int32_t jx_q_num_qubits(int64_t *out)
{
    return guarded([&] {
        *out = device_qubits();
        return 0;
    });
}

// A gate: `kind` 0 named (`op`), 1 unitary (`matrix`, 2^n x 2^n complex),
// 2 global phase; then its parameters, target qubits, control qubits and
// control values.
int32_t jx_q_gate(int32_t kind, const char *op, const double *params, int64_t num_params,
                  const int64_t *qubits, int64_t num_qubits, const int64_t *controls,
                  const int8_t *control_values, int64_t num_controls, int8_t adjoint,
                  const double *matrix)
{
    if (too_many(num_qubits, "a gate") || too_many(num_controls, "a gate's controls")) {
        return 1;
    }
    for (int64_t k = 0; k < num_qubits + num_controls; k++) {
        QUBIT *a = qubit(k < num_qubits ? qubits[k] : controls[k - num_qubits]);
        for (int64_t j = 0; j < k; j++) {
            if (a == qubit(j < num_qubits ? qubits[j] : controls[j - num_qubits])) {
                return fail("a gate is applied to the same qubit twice (target or control)");
            }
        }
    }
    return guarded([&] {
        Gate g;
        g.kind = kind == 0 ? Gate::Named : kind == 1 ? Gate::Unitary : Gate::Phase;
        g.op = op;
        g.params.assign(params, params + num_params);
        for (int64_t k = 0; k < num_qubits; k++) {
            g.qubits.push_back(qubit(qubits[k]));
        }
        for (int64_t k = 0; k < num_controls; k++) {
            g.controls.push_back(qubit(controls[k]));
            g.control_values.push_back(control_values[k] != 0);
        }
        if (g.kind == Gate::Unitary) {
            size_t side = size_t(1) << num_qubits;
            auto *m = reinterpret_cast<const std::complex<double> *>(matrix);
            g.matrix.assign(m, m + side * side);
        }
        g.adjoint = adjoint != 0;
        return apply(std::move(g));
    });
}

// `state_prep` (`bits` null: `state` holds 2^n amplitudes) and
// `set_basis_state` (`bits` holds n bytes, 0 or 1) on the n qubits given.
int32_t jx_q_prepare(const double *state, const int8_t *bits, const int64_t *qubits, int64_t n)
{
    if (too_many(n, "a state preparation")) {
        return 1;
    }
    if (!recordings.empty()) {
        return fail("a state preparation inside an adjoint region has no adjoint");
    }
    return guarded([&] {
        QUBIT *q[MAX_OPERANDS] = {};
        for (int64_t k = 0; k < n; k++) {
            q[k] = qubit(qubits[k]);
        }
        if (bits == nullptr) {
            size_t size = size_t(1) << n;
            auto *data = reinterpret_cast<std::complex<double> *>(const_cast<double *>(state));
            MemRef<std::complex<double>, 1> m{data, data, 0, {size}, {1}};
            __catalyst__qis__SetState(&m, uint64_t(n), JX_ARGS(q));
        }
        else {
            auto *data = const_cast<int8_t *>(bits);
            MemRef<int8_t, 1> m{data, data, 0, {size_t(n)}, {1}};
            __catalyst__qis__SetBasisState(&m, uint64_t(n), JX_ARGS(q));
        }
        return 0;
    });
}

void jx_q_adjoint_begin(void) { recordings.emplace_back(); }

int32_t jx_q_adjoint_end(void)
{
    if (recordings.empty()) {
        return fail("an adjoint region ends that did not begin");
    }
    std::vector<Gate> gates = std::move(recordings.back());
    recordings.pop_back();
    return guarded([&] {
        for (auto g = gates.rbegin(); g != gates.rend(); ++g) {
            g->adjoint = !g->adjoint;
            if (int rc = apply(std::move(*g))) {
                return rc;
            }
        }
        return 0;
    });
}

int32_t jx_q_measure(int64_t q, int32_t postselect, int8_t *out)
{
    if (!recordings.empty()) {
        return fail("a measurement inside an adjoint region has no adjoint");
    }
    return guarded([&] {
        bool *r = __catalyst__qis__Measure(qubit(q), postselect);
        *out = *r ? 1 : 0;
        return 0;
    });
}

int32_t jx_q_named_obs(int64_t kind, int64_t q, int64_t *out)
{
    return guarded([&] {
        *out = __catalyst__qis__NamedObs(kind, qubit(q));
        return 0;
    });
}

int32_t jx_q_hermitian(const double *matrix, const int64_t *qubits, int64_t n, int64_t *out)
{
    if (too_many(n, "a Hermitian observable")) {
        return 1;
    }
    return guarded([&] {
        QUBIT *q[MAX_OPERANDS] = {};
        for (int64_t k = 0; k < n; k++) {
            q[k] = qubit(qubits[k]);
        }
        size_t side = size_t(1) << n;
        auto *data = reinterpret_cast<std::complex<double> *>(const_cast<double *>(matrix));
        MemRef<std::complex<double>, 2> m{data, data, 0, {side, side}, {side, 1}};
        *out = __catalyst__qis__HermitianObs(&m, n, JX_ARGS(q));
        return 0;
    });
}

int32_t jx_q_tensor(const int64_t *terms, int64_t n, int64_t *out)
{
    if (too_many(n, "a tensor product")) {
        return 1;
    }
    return guarded([&] {
        intptr_t t[MAX_OPERANDS] = {};
        for (int64_t k = 0; k < n; k++) {
            t[k] = intptr_t(terms[k]);
        }
        *out = __catalyst__qis__TensorObs(n, JX_ARGS(t));
        return 0;
    });
}

int32_t jx_q_hamiltonian(const double *coeffs, const int64_t *terms, int64_t n, int64_t *out)
{
    if (too_many(n, "a Hamiltonian")) {
        return 1;
    }
    return guarded([&] {
        intptr_t t[MAX_OPERANDS] = {};
        for (int64_t k = 0; k < n; k++) {
            t[k] = intptr_t(terms[k]);
        }
        auto *c = const_cast<double *>(coeffs);
        MemRef<double, 1> m{c, c, 0, {size_t(n)}, {1}};
        *out = __catalyst__qis__HamiltonianObs(&m, n, JX_ARGS(t));
        return 0;
    });
}

// The computational basis of `n` qubits (none: the whole device).
int32_t jx_q_basis(const int64_t *qubits, int64_t n, int64_t *out)
{
    if (too_many(n, "a measurement")) {
        return 1;
    }
    Basis b{{}, false, {}};
    for (int64_t k = 0; k < n; k++) {
        b.qubits.push_back(qubit(qubits[k]));
    }
    bases.push_back(std::move(b));
    *out = -int64_t(bases.size());
    return 0;
}

// The observable of `n` mid-circuit measurement outcomes (`mcmobs`).
int32_t jx_q_outcomes(const int64_t *outcomes, int64_t n, int64_t *out)
{
    if (too_many(n, "mid-circuit measurement results")) {
        return 1;
    }
    bases.push_back(Basis{{}, true, std::vector<int64_t>(outcomes, outcomes + n)});
    *out = -int64_t(bases.size());
    return 0;
}

int32_t jx_q_expval(int64_t obs, int32_t variance, double *out)
{
    if (const Basis *b = basis_of(obs)) {
        // One shot of an outcome: its value (the mean, or the variance
        // mean - mean^2 of a 0/1 value, is taken across the shots).
        if (!b->of_outcomes) {
            return fail("an expectation value of a computational basis");
        }
        if (!one_shot.active) {
            return not_one_shot();
        }
        if (b->outcomes.size() != 1) {
            return fail("the expectation value or variance of %zu mid-circuit measurements at once "
                        "(Catalyst takes one)",
                        b->outcomes.size());
        }
        *out = b->outcomes[0] != 0 ? 1.0 : 0.0;
        return 0;
    }
    if (variance && one_shot.active) {
        return fail("the variance of an observable in a kernel run one shot at a time "
                    "(mcm_method=\"one-shot\"): Catalyst computes it only of mid-circuit "
                    "measurement results");
    }
    return guarded([&] {
        *out = variance ? __catalyst__qis__Variance(obs) : __catalyst__qis__Expval(obs);
        return 0;
    });
}

// probs (0) or counts (3) of mid-circuit measurement outcomes, one shot:
// the outcomes' basis state has probability 1 and count 1.
static int32_t outcomes_measurement(int32_t what, const Basis &b, void *out, int64_t size, int64_t *counts)
{
    if (!one_shot.active) {
        return not_one_shot();
    }
    if (what != 0 && what != 3) {
        return fail("the %s of mid-circuit measurement results is not lowered (probs, counts, "
                    "expval and var are)",
                    what == 1 ? "state" : "sample");
    }
    size_t expected = b.outcomes.size() < 63 ? size_t(1) << b.outcomes.size() : 0;
    if (size_t(size) != expected) {
        return fail("the result has %lld elements; the measurement of %zu outcome(s) has %zu",
                    (long long)size, b.outcomes.size(), expected);
    }
    auto *d = static_cast<double *>(out);
    size_t index = outcome_index(b);
    for (size_t k = 0; k < expected; k++) {
        if (what == 0) {
            d[k] = k == index ? 1.0 : 0.0;
        }
        else {
            d[k] = double(k);
            counts[k] = k == index ? 1 : 0;
        }
    }
    return 0;
}

// Starts a kernel run one shot at a time, of `outputs` results.
void jx_q_one_shot_begin(int64_t outputs)
{
    one_shot = OneShot{true, -1, std::vector<std::vector<double>>(size_t(outputs))};
}

// Whether the kernel runs again after `done` shots (the first always runs:
// it tells the number of shots).
int32_t jx_q_one_shot_more(int64_t done) { return done == 0 || done < one_shot.shots; }

// A shot's result `output` (`n` f64 or, `integer`, i64 elements) added to
// what the shots gave so far (`Last`: replacing it).
int32_t jx_q_one_shot_add(int64_t output, int32_t combine, int32_t integer, const void *data, int64_t n)
{
    std::vector<double> &sum = one_shot.sums[size_t(output)];
    if (sum.empty()) {
        sum.assign(size_t(n), 0.0);
    }
    if (sum.size() != size_t(n)) {
        return fail("a shot's result %lld has %lld elements, an earlier shot's %zu", (long long)output,
                    (long long)n, sum.size());
    }
    for (size_t k = 0; k < sum.size(); k++) {
        double v = integer ? double(static_cast<const int64_t *>(data)[k])
                           : static_cast<const double *>(data)[k];
        sum[k] = combine == Last ? v : sum[k] + v;
    }
    return 0;
}

// The combined result `output` across the shots, written to `data`.
int32_t jx_q_one_shot_result(int64_t output, int32_t combine, int32_t integer, void *data, int64_t n)
{
    const std::vector<double> &sum = one_shot.sums[size_t(output)];
    if (sum.size() != size_t(n) || one_shot.shots <= 0) {
        return fail("a kernel run one shot at a time gave result %lld of %zu elements; %lld expected",
                    (long long)output, sum.size(), (long long)n);
    }
    double shots = double(one_shot.shots);
    for (size_t k = 0; k < sum.size(); k++) {
        double mean = sum[k] / shots;
        double v = combine == Mean ? mean : combine == VarianceOfBits ? mean - mean * mean : sum[k];
        if (integer) {
            static_cast<int64_t *>(data)[k] = int64_t(v);
        }
        else {
            static_cast<double *>(data)[k] = v;
        }
    }
    return 0;
}

void jx_q_one_shot_end(void) { one_shot = OneShot{}; }

// probs (0), state (1), sample (2) or counts (3) of a computational basis,
// into `out` (`size` elements; a sample is `size` rows of `columns`; counts
// write their eigenvalues to `out` and their counts to `counts`).
int32_t jx_q_measurement(int32_t what, int64_t basis, void *out, int64_t size, int64_t columns,
                         int64_t *counts)
{
    const Basis *b = basis_of(basis);
    if (!b) {
        return fail("a measurement of something that is not a computational basis");
    }
    if (b->of_outcomes) {
        return outcomes_measurement(what, *b, out, size, counts);
    }
    return guarded([&] {
        // `state` is the whole device's, whichever qubits its basis names:
        // every Catalyst release lowers it so (`__catalyst__qis__State` with
        // no qubits; the runtime refuses a partial state), and Catalyst
        // <= 0.10 prints it of the basis of every qubit.
        int64_t n = what == 1 ? 0 : int64_t(b->qubits.size());
        int64_t wires = n ? n : device_qubits();
        QUBIT *q[MAX_OPERANDS] = {};
        std::copy(b->qubits.begin(), b->qubits.end(), q);
        size_t expected = wires < 63 ? size_t(1) << wires : 0;
        if (what != 2 && size_t(size) != expected) {
            return fail("the result has %lld elements; the measurement of %lld qubit(s) has %zu",
                     (long long)size, (long long)wires, expected);
        }
        if (what == 2 && (columns != wires || size != device_shots)) {
            return fail("the sample is %lld x %lld; the device takes %lld shot(s) of %lld qubit(s)",
                     (long long)size, (long long)columns, (long long)device_shots, (long long)wires);
        }
        size_t s = size_t(size);
        switch (what) {
        case 0: {
            auto *d = static_cast<double *>(out);
            MemRef<double, 1> m{d, d, 0, {s}, {1}};
            __catalyst__qis__Probs(&m, n, JX_ARGS(q));
            break;
        }
        case 1: {
            auto *d = static_cast<std::complex<double> *>(out);
            MemRef<std::complex<double>, 1> m{d, d, 0, {s}, {1}};
            __catalyst__qis__State(&m, n, JX_ARGS(q));
            break;
        }
        case 2: {
            auto *d = static_cast<double *>(out);
            size_t c = size_t(columns);
            MemRef<double, 2> m{d, d, 0, {s, c}, {c, 1}};
            __catalyst__qis__Sample(&m, n, JX_ARGS(q));
            break;
        }
        default: {
            auto *d = static_cast<double *>(out);
            CountsPair p{{d, d, 0, {s}, {1}}, {counts, counts, 0, {s}, {1}}};
            __catalyst__qis__Counts(&p, n, JX_ARGS(q));
            break;
        }
        }
        return 0;
    });
}

// The derivative of a circuit begins: the runtime records what runs.
int32_t jx_q_tape_begin(void)
{
    if (taping) {
        return fail("a circuit is differentiated inside another one");
    }
    return guarded([&] {
        __catalyst__rt__toggle_recorder(true);
        taping = true;
        tape_tangents.clear();
        return 0;
    });
}

// The tangents of the last gate's `n` parameters (the gate just executed).
int32_t jx_q_tape_tangents(const double *tangents, int64_t n)
{
    if (!recordings.empty()) {
        return fail("a differentiated gate parameter inside an `adjoint` region: its gates run "
                    "reversed at the region's end, so their parameters' order is not known here");
    }
    if (!taping || n < 0 || size_t(n) > tape_tangents.size()) {
        return fail("gate parameter tangents without a gate executed while differentiating");
    }
    std::copy(tangents, tangents + n, tape_tangents.end() - n);
    return 0;
}

// The derivative of a circuit ends: the recorder off, the Jacobian of the
// `num_observables` expectation values recorded with respect to every gate
// parameter executed, and out[k] = sum_j J[k][j] * tangent[j].
int32_t jx_q_tape_end(int64_t num_observables, double *out)
{
    if (!taping) {
        return fail("a circuit's derivative ends that did not begin");
    }
    taping = false;
    if (num_observables < 1 || num_observables > MAX_OPERANDS) {
        return fail("a differentiated circuit measures between 1 and 64 expectation values");
    }
    return guarded([&] {
        __catalyst__rt__toggle_recorder(false);
        size_t n = tape_tangents.size();
        const size_t m = size_t(num_observables);
        std::vector<std::vector<double>> rows(m, std::vector<double>(n));
        std::vector<MemRef<double, 1>> views(m);
        MemRef<double, 1> *args[MAX_OPERANDS] = {};
        for (size_t k = 0; k < rows.size(); k++) {
            double *data = rows[k].data();
            views[k] = MemRef<double, 1>{data, data, 0, {n}, {1}};
            args[k] = &views[k];
        }
        if (n > 0) {
            __catalyst__qis__Gradient(num_observables, JX_ARGS(args));
        }
        for (size_t k = 0; k < rows.size(); k++) {
            double sum = 0.0;
            for (size_t j = 0; j < n; j++) {
                sum += rows[k][j] * tape_tangents[j];
            }
            out[k] = sum;
        }
        tape_tangents.clear();
        return 0;
    });
}

// Parameter-shift begins: the circuit runs unshifted, each executed gate
// parameter's tangent kept (as for the adjoint method, without the
// runtime's recorder).
int32_t jx_q_shift_begin(void)
{
    if (taping || shift.index >= 0) {
        return fail("a circuit is differentiated inside another one");
    }
    taping = true;
    tape_tangents.clear();
    return 0;
}

// The unshifted run has ended: how many gate parameters it executed.
int32_t jx_q_shift_params(int64_t *n)
{
    if (!taping) {
        return fail("a circuit's parameter-shift ends a run that did not begin");
    }
    taping = false;
    shift.expected = int64_t(tape_tangents.size());
    *n = shift.expected;
    return 0;
}

// Whether the last shifted run executed the parameters the unshifted one did.
int shifted_run_matches()
{
    if (shift.index >= 0 && shift.seen != shift.expected) {
        return fail("a circuit shifted for parameter-shift executed %lld gate parameters, "
                    "unshifted %lld: its gates depend on its measurements",
                    (long long)shift.seen, (long long)shift.expected);
    }
    return 0;
}

// The next run shifts parameter `index` by `by`; `*tangent` is its tangent.
int32_t jx_q_shift_select(int64_t index, double by, double *tangent)
{
    if (int rc = shifted_run_matches()) {
        return rc;
    }
    if (index < 0 || index >= shift.expected) {
        return fail("parameter-shift of gate parameter %lld of %lld", (long long)index,
                    (long long)shift.expected);
    }
    shift.index = index;
    shift.by = by;
    shift.seen = 0;
    *tangent = tape_tangents[size_t(index)];
    return 0;
}

// Parameter-shift ends: no parameter shifted any more.
int32_t jx_q_shift_end(void)
{
    int rc = shifted_run_matches();
    shift = Shift{};
    tape_tangents.clear();
    return rc;
}

// A call of the library: `body` (the generated code of the program) run
// with the runtime to itself, inside its initialize/finalize, with nothing
// left behind when the call fails. `seed`: qjit's seed, or null.
typedef int32_t (*Body)(const void *, int64_t, void *, int64_t);
int32_t jx_q_run(Body body, const uint32_t *seed, const void *inputs, int64_t num_inputs, void *outputs,
                 int64_t num_outputs)
{
    std::lock_guard<std::mutex> hold(runtime_lock->mutex);
    // The runtime keeps the pointer for the whole call.
    static uint32_t seed_value;
    uint32_t *seed_ptr = nullptr;
    if (seed) {
        seed_value = *seed;
        seed_ptr = &seed_value;
    }
    __catalyst__rt__initialize(seed_ptr);
    int32_t rc = body(inputs, num_inputs, outputs, num_outputs);
    guarded([&] {
        while (!registers.empty()) {
            void *r = registers.back();
            registers.pop_back();
            if (device_active) {
                __catalyst__rt__qubit_release_array(r);
            }
        }
        if (device_active) {
            __catalyst__rt__device_release();
        }
        return 0;
    });
    registers.clear();
    device_active = false;
    recordings.clear();
    bases.clear();
    one_shot = OneShot{};
    taping = false;
    tape_tangents.clear();
    shift = Shift{};
    guarded([&] {
        __catalyst__rt__finalize();
        return 0;
    });
    return rc;
}
}
