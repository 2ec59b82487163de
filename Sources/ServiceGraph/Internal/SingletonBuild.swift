/// What a build recorded: the creation order and how long each service took.
struct BuildRecord: Sendable {
    /// Singleton slots in the order they became ready (created and `didAdd` done): a topological order.
    var order: [Int32] = []
    /// Per slot, how long the factory took in microseconds (-1 for services the build did not create).
    var factoryMicroseconds: [Int32]
    /// Per slot, how long `didAdd` took in microseconds (-1 when it has no hooks or was not created).
    var didAddMicroseconds: [Int32]
    /// Services whose `didAdd` succeeded, in the order they started.
    var started: [StartedService] = []
    /// Wall-clock time of the whole build.
    var totalDuration: Duration = .zero

    init(count: Int) {
        factoryMicroseconds = Array(repeating: -1, count: count)
        didAddMicroseconds = Array(repeating: -1, count: count)
    }

    func factoryDuration(_ slot: Int) -> Duration? {
        factoryMicroseconds[slot] < 0 ? nil : .microseconds(factoryMicroseconds[slot])
    }

    func didAddDuration(_ slot: Int) -> Duration? {
        didAddMicroseconds[slot] < 0 ? nil : .microseconds(didAddMicroseconds[slot])
    }
}

/// Creates a graph's singletons in dependency order, independent ones concurrently.
///
/// One coordinator owns all the state. Synchronous factories run inline on the coordinator (they
/// cannot suspend, so a task would only add overhead); asynchronous factories and `didAdd` hooks run in
/// child tasks, so the build takes as long as the graph's critical path. A service starts once all
/// its dependencies are ready. On the first failure nothing new starts, running work is awaited, and
/// everything that did start is released in reverse order.
struct SingletonBuild {
    private let core: GraphCore
    private let plan: GraphPlan
    private var waiting: [Int]
    private var ready: [Int] = []
    private var nextReady = 0
    private var running = 0
    private(set) var record: BuildRecord
    private var problems: [ServiceGraphError.Problem] = []
    private let clock = ContinuousClock()
    /// Dynamic types seen to have no lifecycle hooks: most services, whose check is then a set lookup
    /// instead of a dynamic cast.
    private var typesWithoutHooks: Set<ObjectIdentifier> = []

    init(plan: GraphPlan, core: GraphCore) {
        self.core = core
        self.plan = plan
        self.record = BuildRecord(count: core.count)
        self.waiting = (0..<core.count).map { plan.dependencies.degree(of: $0) }
        for slot in 0..<core.count where core.lifetimes[slot] == .singleton && waiting[slot] == 0 {
            ready.append(slot)
        }
    }

    /// The outcome of one child task.
    ///
    /// A finished child task can outlive the moment its result is taken (the runtime releases it a
    /// little later), so neither its result nor its closure holds an instance strongly: the box
    /// travels as an `Unmanaged` carrying one retain, which the receiver takes over.
    private enum Step: @unchecked Sendable {
        case created(slot: Int, box: Unmanaged<AnyBox>, factory: Duration, didAdd: Duration?)
        case failed(slot: Int, ServiceGraphError)
    }

    /// Builds every singleton, or releases what was built and returns the problems.
    mutating func run() async -> Result<BuildRecord, ServiceGraphError> {
        let start = clock.now
        core.events.send(ServiceGraphEvent(.buildStarted))
        await withTaskGroup(of: Step.self) { group in
            while true {
                startReadyServices(in: &group)
                if running == 0 { break }
                guard let step = await group.next() else { break }
                running -= 1
                switch step {
                case .created(let slot, let unmanaged, let factory, let didAdd):
                    let box = unmanaged.takeRetainedValue()
                    let hooks = didAdd == nil ? nil : core.factory(at: slot).hooks(of: box)
                    finish(slot, box, factory: factory, didAdd: didAdd, hooks: hooks)
                case .failed(let slot, let error):
                    problems.append(contentsOf: error.problems.map { located($0, at: slot) })
                }
                if !problems.isEmpty || Task.isCancelled { group.cancelAll() }
            }
        }
        record.totalDuration = start.duration(to: clock.now)
        // Work cancelled because of another failure (or of the caller) did not fail on its own.
        let isCancellation = { (problem: ServiceGraphError.Problem) in problem.underlyingError is CancellationError }
        if Task.isCancelled || problems.contains(where: { !isCancellation($0) }) {
            problems.removeAll(where: isCancellation)
        }
        if Task.isCancelled {
            problems.insert(
                .init(
                    .buildCancelled,
                    key: "build",
                    message:
                        "the build was cancelled; the \(record.started.count) services that had started were released"
                ),
                at: 0
            )
        }
        guard problems.isEmpty else {
            problems += await Lifecycle.release(record.started, of: core)
            core.singletons.removeAll()
            let error = ServiceGraphError(problems)
            core.events.send(ServiceGraphEvent(.buildFailed, duration: start.duration(to: clock.now), error: error))
            return .failure(error)
        }
        core.releaseFactories { core.lifetimes[$0] == .singleton }
        core.events.send(ServiceGraphEvent(.buildFinished, duration: record.totalDuration))
        return .success(record)
    }

    /// Starts every ready service: synchronous factories inline, the rest as child tasks.
    private mutating func startReadyServices(in group: inout TaskGroup<Step>) {
        while problems.isEmpty, !Task.isCancelled, nextReady < ready.count {
            let slot = ready[nextReady]
            nextReady += 1
            let factory = core.factory(at: slot)
            guard factory.isSynchronous else {
                running += 1
                group.addTask { [core] in await Self.create(slot, in: core) }
                continue
            }
            let start = clock.now
            var arguments = Arguments(core: core, scope: nil, slot: slot)
            do {
                let box = try factory.makeBoxNow(&arguments)
                let elapsed = start.duration(to: clock.now)
                if hooks(of: box, madeBy: factory) != nil {
                    running += 1
                    let handOff = Unmanaged.passRetained(box)
                    group.addTask { [core] in
                        await Self.didAdd(slot, handOff.takeRetainedValue(), factory: elapsed, core: core)
                    }
                } else {
                    finish(slot, box, factory: elapsed, didAdd: nil, hooks: nil)
                }
            } catch {
                problems.append(located(core.failure(error, at: slot).problems[0], at: slot))
            }
        }
    }

    /// The hooks of a freshly made instance, remembering the types that have none.
    private mutating func hooks(of box: AnyBox, madeBy factory: AnyFactory) -> (any LifecycleHooks)? {
        let type = factory.instanceType(of: box)
        if typesWithoutHooks.contains(type) { return nil }
        let hooks = factory.hooks(of: box)
        if hooks == nil { typesWithoutHooks.insert(type) }
        return hooks
    }

    /// Runs an asynchronous factory, then `didAdd`.
    private static func create(_ slot: Int, in core: GraphCore) async -> Step {
        let clock = ContinuousClock()
        let start = clock.now
        var arguments = Arguments(core: core, scope: nil, slot: slot)
        let factory = core.factory(at: slot)
        let box: AnyBox
        do {
            box = try await factory.makeBox(&arguments)
        } catch {
            return .failed(slot: slot, core.failure(error, at: slot))
        }
        let elapsed = start.duration(to: clock.now)
        guard factory.hooks(of: box) != nil else {
            return .created(slot: slot, box: .passRetained(box), factory: elapsed, didAdd: nil)
        }
        return await didAdd(slot, box, factory: elapsed, core: core)
    }

    /// Runs `didAdd` on a created instance (which has hooks).
    private static func didAdd(_ slot: Int, _ box: AnyBox, factory: Duration, core: GraphCore) async -> Step {
        guard let hooks = core.factory(at: slot).hooks(of: box) else {
            return .created(slot: slot, box: .passRetained(box), factory: factory, didAdd: nil)
        }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            try await Lifecycle.didAdd(hooks, of: slot, in: core)
        } catch {
            return .failed(slot: slot, error)
        }
        return .created(slot: slot, box: .passRetained(box), factory: factory, didAdd: start.duration(to: clock.now))
    }

    /// Records a ready service and makes its dependents ready when it was their last dependency.
    private mutating func finish(
        _ slot: Int,
        _ box: AnyBox,
        factory: Duration,
        didAdd: Duration?,
        hooks: (any LifecycleHooks)?
    ) {
        core.singletons.store(box, at: slot)
        core.events.send(ServiceGraphEvent(.serviceCreated, key: core.name(slot), duration: factory))
        record.order.append(Int32(slot))
        record.factoryMicroseconds[slot] = factory.microseconds
        record.didAddMicroseconds[slot] = didAdd?.microseconds ?? -1
        if let hooks { record.started.append(StartedService(slot: slot, hooks: hooks)) }
        for dependent in plan.dependents[slot] {
            waiting[dependent] -= 1
            if waiting[dependent] == 0 && core.lifetimes[dependent] == .singleton { ready.append(dependent) }
        }
    }

    /// Gives a build failure the path from a root of the graph down to the failing service.
    private func located(_ problem: ServiceGraphError.Problem, at slot: Int) -> ServiceGraphError.Problem {
        .init(
            problem.code,
            key: problem.key,
            path: plan.pathFromRoot(to: slot),
            site: problem.site,
            message: problem.message,
            underlyingError: problem.underlyingError
        )
    }
}

extension Duration {
    /// The duration in whole microseconds, saturating at `Int32.max` (about 35 minutes).
    var microseconds: Int32 {
        let (seconds, attoseconds) = components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        return Int32(clamping: micros)
    }
}
