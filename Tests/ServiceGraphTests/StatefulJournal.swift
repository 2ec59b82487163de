import ServiceGraph
import ServiceGraphTestSupport

/// Who made an instance, as the stateful test tags its operations: a graph's build (or a resolve on
/// the graph itself) or a scope.
enum ModelOwner: Hashable, Sendable, CustomStringConvertible {
    case graph(Int)
    case scope(Int)

    var description: String {
        switch self {
        case .graph(let id): "G\(id)"
        case .scope(let id): "S\(id)"
        }
    }
}

/// The operation a factory runs for: task-local, so it reaches the tasks a build or a scope starts.
enum ModelContext {
    @TaskLocal static var owner: ModelOwner?
}

/// How one step of a service (its factory, `didAdd` or `willRemove`) misbehaves.
enum ModelFault: Sendable, Equatable, CustomStringConvertible {
    case none
    case throwing
    /// Sleeps that many milliseconds (honouring cancellation).
    case slow(Int)
    /// Sleeps until cancelled (bounded to a minute so that an abandoned task ends eventually).
    case hanging

    var description: String {
        switch self {
        case .none: ""
        case .throwing: "throws"
        case .slow(let milliseconds): "slow\(milliseconds)"
        case .hanging: "hangs"
        }
    }

    var isHanging: Bool { self == .hanging }

    /// Waits as the fault says; throws `CancellationError` when cancelled while waiting.
    func wait() async throws {
        switch self {
        case .slow(let milliseconds): try await Task.sleep(for: .milliseconds(milliseconds))
        case .hanging: try await Task.sleep(for: .seconds(60))
        case .none, .throwing: break
        }
    }
}

/// Everything the test knows of one instance a model factory made.
struct InstanceRecord: Sendable {
    enum HookState: Sendable, Equatable {
        case notRun
        case running
        case succeeded
        case failed
    }

    let serial: Int
    /// The short name of the key whose factory made it (`k3`, `k3 double`).
    let key: String
    /// The provider that made it (`p4`, `o2`, `c7`, `d5`, `v1`).
    let label: String
    let owner: ModelOwner?
    /// Singleton or scoped: the graph owns it, and runs its hooks if it has any.
    let isOwned: Bool
    let hasHooks: Bool
    let didAddFault: ModelFault
    let willRemoveFault: ModelFault
    /// The serials of the model instances it was given as dependencies, in order.
    let dependencies: [Int]
    /// When it was made, in journal steps.
    let createdAt: Int
    var didAddCalls = 0
    var didAdd = HookState.notRun
    var willRemoveCalls = 0
    var willRemove = HookState.notRun
    var willRemoveStartedAt: Int?
    /// Its `willRemove` saw its task cancelled (while not hanging on purpose): cleanup cut short.
    var willRemoveSawCancellation = false
    /// The test gave up on this instance's `willRemove` (its graph was dropped without shutdown).
    var isAbandoned = false
    var isAlive = true

    /// Its `didAdd` succeeded, so it must get `willRemove` (unless abandoned).
    var isStarted: Bool { hasHooks && isOwned && didAdd == .succeeded }

    var hasFinishedWillRemove: Bool { willRemove == .succeeded || willRemove == .failed }

    /// `k3#12(p4)@S2`: key, serial, provider and owner.
    var name: String { "\(key)#\(serial)(\(label))" + (owner.map { "@\($0)" } ?? "") }
}

/// The stateful test's record of every instance and lifecycle hook, shared by the factories and hooks
/// of one sequence: checks made at the moment a hook runs (hooks once per instance, nothing used after
/// its `willRemove`, dependents removed first) land in ``violations``.
final class ModelJournal: Sendable {
    private struct State {
        var step = 0
        var nextSerial = 0
        var records: [Int: InstanceRecord] = [:]
        /// serial → serials of the owned instances made with it as a dependency.
        var dependents: [Int: [Int]] = [:]
        var violations: [String] = []
        /// The owner of the operation running now, for factories that run where no task-local reaches.
        var currentOwner: ModelOwner?
        var events: [ModelEvent] = []
    }

    private let state = Locked(State())

    // MARK: Instances

    func register(
        key: String,
        label: String,
        isOwned: Bool,
        hasHooks: Bool,
        didAddFault: ModelFault,
        willRemoveFault: ModelFault,
        dependencies: [Int]
    ) -> Int {
        let owner = ModelContext.owner
        return state.withLock { state in
            let serial = state.nextSerial
            state.nextSerial += 1
            state.step += 1
            state.records[serial] = InstanceRecord(
                serial: serial,
                key: key,
                label: label,
                owner: owner ?? state.currentOwner,
                isOwned: isOwned,
                hasHooks: hasHooks,
                didAddFault: didAddFault,
                willRemoveFault: willRemoveFault,
                dependencies: dependencies,
                createdAt: state.step
            )
            if isOwned {
                for dependency in dependencies { state.dependents[dependency, default: []].append(serial) }
            }
            return serial
        }
    }

    func released(_ serial: Int) {
        state.withLock { $0.records[serial]?.isAlive = false }
    }

    /// A factory received `dependencies` (or, `afterWaiting`, uses them once its slow or hanging start
    /// is over): none may be removed already, and each owned one with hooks must be started.
    func factoryCalled(_ label: String, key: String, with dependencies: [Int], afterWaiting: Bool = false) {
        state.withLock { state in
            for serial in dependencies {
                guard let dependency = state.records[serial] else { continue }
                if dependency.willRemoveCalls > 0 {
                    let when = afterWaiting ? "used, after its slow start," : "received"
                    state.violations.append(
                        "used after willRemove: the factory of \(key) (\(label)) \(when) \(dependency.name), whose willRemove already ran"
                    )
                }
                if dependency.hasHooks && dependency.isOwned && dependency.didAdd != .succeeded {
                    state.violations.append(
                        "used before ready: the factory of \(key) (\(label)) received \(dependency.name), whose didAdd is \(dependency.didAdd)"
                    )
                }
            }
        }
    }

    func didAddBegan(_ serial: Int) {
        state.withLock { state in
            state.step += 1
            guard var record = state.records[serial] else { return }
            record.didAddCalls += 1
            if !record.isOwned {
                state.violations.append("hooks on a transient: didAdd ran on \(record.name)")
            }
            if record.didAddCalls > 1 {
                state.violations.append(
                    "hooks ran twice on one instance: didAdd ran \(record.didAddCalls) times on \(record.name)"
                )
            }
            if record.willRemoveCalls > 0 {
                state.violations.append("didAdd after willRemove on \(record.name)")
            }
            record.didAdd = .running
            state.records[serial] = record
            Self.checkDependenciesPresent(of: record, in: &state, doing: "didAdd")
        }
    }

    func didAddEnded(_ serial: Int, succeeded: Bool) {
        state.withLock { state in
            state.step += 1
            guard var record = state.records[serial] else { return }
            record.didAdd = succeeded ? .succeeded : .failed
            state.records[serial] = record
            if succeeded { Self.checkDependenciesPresent(of: record, in: &state, doing: "didAdd (at its end)") }
        }
    }

    func willRemoveBegan(_ serial: Int) {
        state.withLock { state in
            state.step += 1
            guard var record = state.records[serial] else { return }
            record.willRemoveCalls += 1
            if !record.isOwned {
                state.violations.append("hooks on a transient: willRemove ran on \(record.name)")
            }
            if record.willRemoveCalls > 1 {
                state.violations.append(
                    "hooks ran twice on one instance: willRemove ran \(record.willRemoveCalls) times on \(record.name)"
                )
            }
            if record.didAdd != .succeeded {
                state.violations.append(
                    "willRemove without a successful didAdd on \(record.name) (didAdd \(record.didAdd))"
                )
            }
            record.willRemove = .running
            record.willRemoveStartedAt = state.step
            state.records[serial] = record
            Self.checkDependenciesPresent(of: record, in: &state, doing: "willRemove")
            Self.checkDependentsRemoved(before: record, in: &state)
        }
    }

    /// `willRemove` ran to its end: it returned (`succeeded`) or threw.
    func willRemoveEnded(_ serial: Int, succeeded: Bool, sawCancellation: Bool) {
        state.withLock { state in
            state.step += 1
            state.records[serial]?.willRemove = succeeded ? .succeeded : .failed
            if sawCancellation { state.records[serial]?.willRemoveSawCancellation = true }
        }
    }

    /// A hook of `record` uses its dependencies: none may be removed yet.
    private static func checkDependenciesPresent(of record: InstanceRecord, in state: inout State, doing hook: String) {
        for serial in record.dependencies {
            guard let dependency = state.records[serial], dependency.willRemoveCalls > 0 else { continue }
            state.violations.append(
                "used after willRemove: \(hook) of \(record.name) ran after its dependency \(dependency.name) was removed"
            )
        }
    }

    /// Everything started that depends on `record` (directly, or through owned instances without hooks)
    /// must have finished its `willRemove` (or hang in it, abandoned) before `record`'s starts.
    private static func checkDependentsRemoved(before record: InstanceRecord, in state: inout State) {
        var stack = state.dependents[record.serial] ?? []
        var seen = Set<Int>()
        while let serial = stack.popLast() {
            guard seen.insert(serial).inserted, let dependent = state.records[serial] else { continue }
            guard dependent.hasHooks else {
                stack.append(contentsOf: state.dependents[serial] ?? [])
                continue
            }
            guard dependent.didAdd == .succeeded, !dependent.isAbandoned else { continue }
            let removed =
                dependent.hasFinishedWillRemove
                || (dependent.willRemove == .running && dependent.willRemoveFault.isHanging)
            if !removed {
                let where_ = dependent.willRemove == .running ? "was still in its willRemove" : "had not been removed"
                state.violations.append(
                    "released too early: willRemove of \(record.name) began while \(dependent.name), which depends on it, \(where_)"
                )
            }
        }
    }

    // MARK: Reading

    func record(_ serial: Int) -> InstanceRecord? { state.withLock { $0.records[serial] } }

    var records: [InstanceRecord] { state.withLock { Array($0.records.values).sorted { $0.serial < $1.serial } } }

    /// Instances made at or after serial `first`.
    func records(from first: Int) -> [InstanceRecord] {
        state.withLock { state in
            (first..<state.nextSerial).compactMap { state.records[$0] }
        }
    }

    var nextSerial: Int { state.withLock { $0.nextSerial } }
    var step: Int { state.withLock { $0.step } }

    var alive: [InstanceRecord] { records.filter(\.isAlive) }

    func abandon(_ serials: some Sequence<Int>) {
        state.withLock { state in
            for serial in serials { state.records[serial]?.isAbandoned = true }
        }
    }

    func setCurrentOwner(_ owner: ModelOwner?) {
        state.withLock { $0.currentOwner = owner }
    }

    /// The violations recorded since the last call.
    func takeViolations() -> [String] {
        state.withLock { state in
            defer { state.violations = [] }
            return state.violations
        }
    }

    // MARK: Events

    func recordEvent(_ event: ModelEvent) {
        state.withLock { $0.events.append(event) }
    }

    func events(of graph: Int, kind: ServiceGraphEvent.Kind) -> [ModelEvent] {
        state.withLock { $0.events.filter { $0.graph == graph && $0.kind == kind } }
    }
}

/// One graph event the test keeps: which graph sent it, its kind and its key.
struct ModelEvent: Sendable {
    let graph: Int
    let kind: ServiceGraphEvent.Kind
    let key: String?
}
