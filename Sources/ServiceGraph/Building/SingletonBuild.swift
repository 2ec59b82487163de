/// Creates a graph's singletons in dependency order, independent ones concurrently.
///
/// One coordinator owns all the state. Synchronous factories run inline on the coordinator (they
/// cannot suspend, so a task would only add overhead); asynchronous factories and `didAdd` hooks run in
/// tasks of their own that report to the coordinator's ``BuildInbox``, so the build takes as long as
/// the graph's critical path. A service starts once all its dependencies are ready.
///
/// Two phases. While every service is done as soon as it is made (a synchronous factory, no hooks to
/// run), the build follows the plan's order, a plain loop with nothing to count. At the first service
/// that is not (its factory is asynchronous, or `didAdd` must run), it counts for each remaining
/// service its dependencies not yet ready (``Topology/Countdown``), and from then on starts services
/// as they become ready.
///
/// On the first failure nothing new starts, the running work is cancelled and awaited, and everything
/// that did start is released in reverse order. When the caller cancels the build, it returns at
/// once: work that ignores cancellation is abandoned (an abandoned instance is dropped, or released by
/// its own task if its `didAdd` had already begun), and the rest is released.
struct SingletonBuild {
    private let core: _GraphCore
    private let plan: GraphPlan
    /// Where the first phase is in the plan's order.
    private var nextInOrder = 0
    /// Which services have all their dependencies ready: nil in the first phase.
    private var countdown: Topology.Countdown?
    /// In the second phase, the services ready to start, and how many have been started.
    private var ready: [Int] = []
    private var nextReady = 0
    /// The tasks at work on a service (an async factory, a `didAdd`), by slot.
    private var running: [Int: Task<Void, Never>] = [:]
    /// The tasks that have reported: awaited before the build returns, so none still holds what it
    /// made when the caller goes on.
    private var reported: [Task<Void, Never>] = []
    /// The tasks the build gave up on (timed out, or still at work when the build was cancelled), by
    /// slot: what they depend on is released only once they end.
    private var abandoned: [Int: Task<Void, Never>] = [:]
    /// The singletons made that hand out an instance whose `didAdd` is still running (for its holder,
    /// the key), finished once it has: what depends on them must not start before the instance.
    private var awaitingHolder: [Int: [(slot: Int, box: _AnyBox, factory: Duration)]] = [:]
    /// For the next generation of a graph: the singletons it takes over from the current one, by slot
    /// (empty otherwise), placed as they are (no factory, no hook) when their turn comes.
    private var adopted: [_AnyBox?]
    private(set) var log: BuildLog
    private var problems: [ServiceGraphError.Problem] = []
    private let clock = ContinuousClock()
    /// Where the tasks report: made with the first task, so that a build of synchronous factories alone
    /// makes none (its state's types are the only ones the runtime would otherwise instantiate for it in a
    /// fresh process, a conformance scan included: a first build's cost).
    private var inbox: BuildInbox?

    /// The inbox the tasks report to, made on first use. Out of line: inlined, its type's metadata would
    /// be asked for on every service's start.
    @inline(never)
    private mutating func taskInbox() -> BuildInbox {
        if let inbox { return inbox }
        let inbox = BuildInbox()
        self.inbox = inbox
        return inbox
    }

    /// What a build ends with: not a `Result`, whose type the runtime would instantiate (and check its
    /// `Error` requirement, a scan of every conformance the first time) in each fresh process.
    enum Outcome {
        case built(BuildLog)
        case failed(ServiceGraphError)
    }

    init(plan: GraphPlan, core: _GraphCore, adopting adopted: [_AnyBox?] = []) {
        self.core = core
        self.plan = plan
        self.adopted = adopted
        self.log = BuildLog()
    }

    /// Builds every singleton, or releases what was built and returns the problems.
    nonisolated(nonsending) mutating func run() async -> Outcome {
        let start = clock.now
        core.events.send(ServiceGraphEvent(.buildStarted))
        var isAbandoned = false
        while true {
            startReadyServices()
            // Work is running, so it has an inbox.
            guard let inbox, !running.isEmpty else { break }
            guard let steps = await inbox.next() else {
                isAbandoned = true
                break
            }
            for step in steps { receive(step) }
            if !problems.isEmpty {
                for task in running.values { task.cancel() }
            }
        }
        // Work that finished after the last look (or before an abandonment) is taken in; what finishes
        // later finds the inbox closed and cleans up after itself.
        for task in running.values { task.cancel() }
        for step in inbox?.close() ?? [] { receive(step) }
        abandoned.merge(running) { first, _ in first }
        running = [:]
        for task in reported { await task.value }
        reported = []
        log.totalDuration = start.duration(to: clock.now)
        let isCancelled = isAbandoned || Task.isCancelled
        // Work cancelled because of another failure (or of the caller) did not fail on its own.
        let isCancellation = { (problem: ServiceGraphError.Problem) in problem.underlyingError is CancellationError }
        if isCancelled || problems.contains(where: { !isCancellation($0) }) {
            problems.removeAll(where: isCancellation)
        }
        if isCancelled {
            problems.insert(
                .init(
                    .buildCancelled,
                    key: "build",
                    message:
                        "the build was cancelled; the \(log.started.count) services that had started were released"
                        + (abandoned.isEmpty ? "" : " (those that abandoned work still uses once it ends)")
                ),
                at: 0
            )
        }
        guard problems.isEmpty else {
            let (now, later, inUse) = partitionStartedByAbandonedWork()
            // Singletons created on first use during the build (a factory read a lazy handle) go with
            // the rest, each before what it uses, those abandoned work still uses with them once it
            // ends; one still being created removes itself when done.
            let createdOnFirstUse = core.deferredSingletons?.closeWithoutWaiting() ?? []
            let createdInUse = createdOnFirstUse.filter { inUse?[$0.slot] == true }
            let createdFree = createdOnFirstUse.filter { inUse?[$0.slot] != true }
            let aliases = log.aliases + (core.deferredSingletons?.aliasesSoFar ?? [])
            problems += await Lifecycle.release(
                Lifecycle.startOrder(of: now, and: createdFree, aliases: aliases, in: core),
                of: core
            )
            // The singletons abandoned work may still read stay in their slots until it ends: a slot is
            // read unretained, so emptying it under a reader would free the instance as it is taken.
            core.releaseSingletons(keeping: inUse)
            releaseWhenAbandonedWorkEnds(
                Lifecycle.startOrder(of: later, and: createdInUse, aliases: aliases, in: core),
                thenTheSingletonsKept: inUse != nil
            )
            let error = ServiceGraphError(problems)
            core.events.send(ServiceGraphEvent(.buildFailed, duration: start.duration(to: clock.now), error: error))
            return .failed(error)
        }
        core.releaseSingletonFactories()
        core.events.send(ServiceGraphEvent(.buildFinished, duration: log.totalDuration))
        return .built(log)
    }

    /// The started services to release now, and those that abandoned work still depends on
    /// (directly or not), to release once that work ends: a service is never removed while something
    /// that uses it may still be starting. `inUse` marks every slot that work may still read; nil when
    /// nothing was abandoned.
    private func partitionStartedByAbandonedWork() -> (
        now: [StartedService], later: [StartedService], inUse: [Bool]?
    ) {
        guard !abandoned.isEmpty else { return (log.started, [], nil) }
        var inUse = Array(repeating: false, count: core.count)
        var stack = Array(abandoned.keys)
        while let slot = stack.popLast() {
            for dependency in plan.edges.dependencies(of: slot) where !inUse[dependency] {
                inUse[dependency] = true
                stack.append(dependency)
            }
        }
        // An instance a service in use hands out is in use, whichever service runs its hooks.
        for alias in log.aliases where inUse[alias.slot] {
            inUse[alias.holder] = true
        }
        var now: [StartedService] = []
        var later: [StartedService] = []
        for service in log.started {
            if inUse[service.slot] { later.append(service) } else { now.append(service) }
        }
        return (now, later, inUse)
    }

    /// Releases `services`, in reverse order, in the background once every abandoned task has ended
    /// (an abandoned instance whose `didAdd` succeeded late is removed by its own task first), then the
    /// singletons the core kept for that work. Started after the coordinator's last write to the core.
    private func releaseWhenAbandonedWorkEnds(_ services: [StartedService], thenTheSingletonsKept: Bool) {
        guard !services.isEmpty || thenTheSingletonsKept else { return }
        let tasks = Array(abandoned.values)
        _ = UnretainingTask.start { [core] in
            for task in tasks { await task.value }
            _ = await Lifecycle.releaseInPlace(services, of: core)
            if thenTheSingletonsKept { core.releaseSingletons() }
        }
    }

    /// Takes in what a service's task reported.
    private mutating func receive(_ step: BuildStep) {
        switch step {
        case .created(let slot, let box, let hooks, let factory, let didAdd):
            guard let task = running.removeValue(forKey: slot) else { return }
            reported.append(task)
            if let hooks { log.started.append(StartedService(slot: slot, hooks: hooks)) }
            finish(slot, box, factory: factory, didAdd: didAdd)
            // The services handing out this instance too may now finish (rare: an instance under
            // several keys, started while another key's factory returned it).
            if hooks != nil, !awaitingHolder.isEmpty, let aliases = awaitingHolder.removeValue(forKey: slot) {
                for alias in aliases { finish(alias.slot, alias.box, factory: alias.factory, didAdd: nil) }
            }
        case .aliased(let slot, let box, let holder, let factory):
            guard let task = running.removeValue(forKey: slot) else { return }
            reported.append(task)
            alias(slot, box, heldBy: holder, factory: factory)
        case .failed(let slot, let error):
            guard let task = running.removeValue(forKey: slot) else { return }
            reported.append(task)
            problems.append(contentsOf: error.problems.map { located($0, at: slot) })
        case .factoryTimedOut(let slot, let limit):
            guard let task = running.removeValue(forKey: slot) else { return }
            task.cancel()
            abandoned[slot] = task
            problems.append(located(Lifecycle.factoryTimedOut(slot, after: limit, in: core), at: slot))
        }
    }

    /// Starts every ready service: synchronous factories inline, the rest in tasks of their own.
    ///
    /// One clock read per service: a synchronous factory's time runs from the previous read (the end
    /// of the service before it, or the start of this pass), so the bookkeeping in between, well under
    /// a microsecond, counts to it; the clock is read again after what takes longer (starting a task,
    /// switching to the second phase). The log keeps whole microseconds.
    private mutating func startReadyServices() {
        // The singletons' factories are read from the plan's providers (the builder's, shared); a copy of
        // one retains nothing when `provide` was inlined where it was called (its closures capture
        // nothing).
        let (providers, order, core) = (plan.providers, plan.order, self.core)
        let lifetimes = core.buffers.lifetimes  // raw memory: no reference counting per service
        let deferred = plan.deferred
        var lap = clock.now
        var isCancelled = Task.isCancelled
        while problems.isEmpty, !isCancelled {
            let slot: Int
            if countdown == nil {
                guard nextInOrder < order.count else { return }
                slot = order[nextInOrder]
                nextInOrder += 1
                if ReadAhead.startsBatch(nextInOrder, of: order.count) {
                    touchDependencies(of: order, from: nextInOrder)
                }
                // Cancellation is looked at every 64 services: a look costs as much as a small factory.
                if nextInOrder & 63 == 0 { isCancelled = Task.isCancelled }
                if lifetimes[slot] != .singleton { continue }
                // A singleton created on first use is not the build's.
                if let deferred, deferred[slot] { continue }
            } else {
                guard nextReady < ready.count else { return }
                slot = ready[nextReady]
                nextReady += 1
                if nextReady & 63 == 0 { isCancelled = Task.isCancelled }
            }
            if !adopted.isEmpty, let box = adopted[slot].take() {
                finish(slot, box, factory: .zero, didAdd: nil, isAdopted: true)
                continue
            }
            startService(slot, with: providers[slot].factory, in: core, lap: &lap)
        }
    }

    /// Reads the created instances that the services of `order` one batch after `position` depend on,
    /// and the first word of each: in a large graph they are far apart in memory, and reads made
    /// together wait for memory together, where the factories' own reads, one dependency after the
    /// other, would wait once each.
    private func touchDependencies(of order: [Int], from position: Int) {
        let start = position &+ ReadAhead.batch
        let end = min(start &+ ReadAhead.batch, order.count)
        guard start < end else { return }
        let buffers = core.buffers
        var sum: UInt = 0
        withUnsafeTemporaryAllocation(of: UInt.self, capacity: 8 * ReadAhead.batch) { words in
            var count = 0
            // First the instances' words, then what they point at: each pass's reads are independent.
            for index in start..<end {
                let slot = order[index]
                for edge in Int(buffers.dependencyStart[slot])..<Int(buffers.dependencyStart[slot &+ 1])
                where count < words.count {
                    words[count] = buffers.instances[Int(buffers.dependencySlots[edge])]
                    count &+= 1
                }
            }
            for word in words[..<count] {
                // A created instance (a positive word; see ``_GraphCore/Buffers/singletonBox(at:)``).
                guard Int(bitPattern: word) > 0, let object = UnsafeRawPointer(bitPattern: word) else { continue }
                sum &+= object.load(as: UInt.self)
            }
        }
        ReadAhead.keep(sum)
    }

    /// Starts the service at `slot`: a synchronous factory is run here, its instance finished or, if
    /// its `didAdd` must run, handed to a task; an asynchronous factory is handed to a task. `lap` is
    /// the previous clock read, and the factory's time runs from it.
    /// `core` is this build's, passed in so that the loop holds it once rather than once per service.
    private mutating func startService(
        _ slot: Int,
        with factory: borrowing _AnyFactory,
        in core: _GraphCore,
        lap: inout ContinuousClock.Instant
    ) {
        guard factory.isSynchronous else {
            let inbox = taskInbox()
            running[slot] = UnretainingTask.start { [core] in
                await Self.create(slot, in: core, reportingTo: inbox)
            }
            startCountingDown()
            lap = clock.now
            return
        }
        let box: _AnyBox
        do {
            box = try core.makeBoxSynchronously(at: slot, with: factory)
        } catch {
            problems.append(located(core.failure(error, at: slot).problems[0], at: slot))
            return
        }
        let end = clock.now
        let elapsed = lap.duration(to: end)
        lap = end
        // `claimHooks` tests for hooks first: making the hooks' existential is for the instances that have them.
        let claim = factory.claimHooks(of: box, for: slot, in: core.hookClaims, takingOver: true)
        switch claim {
        case .claimed(let hooks):
            let inbox = taskInbox()
            running[slot] = UnretainingTask.start { [core] in
                await Self.start(slot, box, hooks: hooks, factory: elapsed, in: core, reportingTo: inbox)
            }
            startCountingDown()
            lap = clock.now  // the switch is not the next factory's time
        case .takenOver(let hooks):
            log.started.append(StartedService(slot: slot, hooks: hooks))
            finish(slot, consume box, factory: elapsed, didAdd: nil)
        case .held(let holder):
            alias(slot, box, heldBy: holder, factory: elapsed)
        case .none:
            finish(slot, consume box, factory: elapsed, didAdd: nil)
        }
    }

    /// Records the service at `slot`, which hands out the instance whose hooks the service at `holder`
    /// runs: it finishes once the instance has started (at once if it has, or if a singleton created on
    /// first use holds it), so that what depends on it starts after the instance; and it is released
    /// with it (``Lifecycle/startOrder(of:and:aliases:in:)``).
    private mutating func alias(_ slot: Int, _ box: consuming _AnyBox, heldBy holder: Int, factory: Duration) {
        if let alias = HookAlias(slot, heldBy: holder, in: core) { log.aliases.append(alias) }
        guard running[holder] != nil else {
            finish(slot, box, factory: factory, didAdd: nil)
            return
        }
        awaitingHolder[holder, default: []].append((slot, box, factory))
    }

    /// Ends the first phase: from here on, a service starts when its last dependency is ready. The
    /// services the first phase made are ready; the one it just started in a task (the last one it
    /// took from the order), and those after it in the order, are not.
    private mutating func startCountingDown() {
        guard countdown == nil else { return }
        let (core, lifetimes) = (self.core, plan.lifetimes)
        // A singleton reaches a service the build does not make (a transient or scoped one, or a
        // singleton created on first use) only through a provider or a lazy handle: such a service is
        // passed through, so that the singleton still starts after the singletons the handle's chain
        // needs (its factory or `didAdd` may use the handle).
        let hasHandles = plan.edgeKinds?.contains(where: \.isHandle) ?? false
        let deferred = plan.deferred
        let countdown =
            hasHandles
            ? Topology.Countdown(
                plan.edges,
                order: plan.order,
                finished: { core.buffers.singletonBox(at: $0) != nil },
                passThrough: lifetimes.indices.map { lifetimes[$0] != .singleton || deferred?[$0] == true }
            )
            : Topology.Countdown(plan.edges) { core.buffers.singletonBox(at: $0) != nil }
        for slot in plan.order[nextInOrder...]
        where lifetimes[slot] == .singleton && deferred?[slot] != true && countdown.isReady(slot) {
            ready.append(slot)
        }
        self.countdown = countdown
    }

    /// Runs an asynchronous factory (within the factory timeout), then `didAdd`.
    private static func create(_ slot: Int, in core: _GraphCore, reportingTo inbox: BuildInbox) async {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = core.factoryTimeout.map { FactoryDeadline($0, slot: slot, inbox: inbox) }
        let factory: _AnyFactory
        let box: _AnyBox
        do {
            factory = try core.factory(at: slot)
            box = try await core.makeBox(at: slot, in: nil)
        } catch {
            if deadline?.factoryFinished() ?? true {
                inbox.post(.failed(slot: slot, core.failure(error, at: slot)))
            }
            return
        }
        // Too late: the build has given up on this factory, and its instance never started.
        guard deadline?.factoryFinished() ?? true else { return }
        let elapsed = start.duration(to: clock.now)
        switch factory.claimHooks(of: box, for: slot, in: core.hookClaims, takingOver: true) {
        case .claimed(let hooks):
            await Self.start(slot, box, hooks: hooks, factory: elapsed, in: core, reportingTo: inbox)
        case .takenOver(let hooks):
            inbox.post(.created(slot: slot, box: box, hooks: hooks, factory: elapsed, didAdd: nil))
        case .held(let holder):
            inbox.post(.aliased(slot: slot, box: box, holder: holder, factory: elapsed))
        case .none:
            inbox.post(.created(slot: slot, box: box, hooks: nil, factory: elapsed, didAdd: nil))
        }
    }

    /// Runs `didAdd` on a created instance whose hooks this graph claimed.
    private static func start(
        _ slot: Int,
        _ box: _AnyBox,
        hooks: InstanceHooks,
        factory: Duration,
        in core: _GraphCore,
        reportingTo inbox: BuildInbox
    ) async {
        // An abandoned build starts nothing more: a service that never started is never stopped.
        guard !inbox.isClosed else {
            core.hookClaims.giveBack(hooks)
            return
        }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            try await Lifecycle.didAdd(hooks, of: slot, in: core)
        } catch {
            core.hookClaims.giveBack(hooks)
            inbox.post(.failed(slot: slot, error))
            return
        }
        let step = BuildStep.created(
            slot: slot,
            box: box,
            hooks: hooks,
            factory: factory,
            didAdd: start.duration(to: clock.now)
        )
        if !inbox.post(step) {
            // Started after the build was abandoned: this task stops what it started.
            _ = await Lifecycle.releaseInPlace([StartedService(slot: slot, hooks: hooks)], of: core)
        }
    }

    /// Records a ready service and makes its dependents ready when it was their last dependency.
    private mutating func finish(
        _ slot: Int,
        _ box: consuming _AnyBox,
        factory: Duration,
        didAdd: Duration?,
        isAdopted: Bool = false
    ) {
        core.storeSingleton(box, at: slot)
        // Neither a singleton a live graph took over nor a parent's that a child graph shares was made
        // by this build (its parent made it, and ran its didAdd).
        if !isAdopted && core.events.isEnabled(.serviceCreated) && !plan.providers[slot].factory.isBorrowed {
            core.events.send(ServiceGraphEvent(.serviceCreated, key: core.name(slot), duration: factory))
        }
        log.noteFactory(slot, took: factory)
        if let didAdd { log.noteDidAdd(slot, took: didAdd) }
        // In the first phase, the plan's order is a topological one: nothing to count.
        guard countdown != nil else { return }
        let lifetimes = core.buffers.lifetimes  // raw memory: no reference counting per service
        countdown!.finish(slot, appendingReadyTo: &ready) { lifetimes[$0] == .singleton }
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

/// What a service's task reports to the build's coordinator.
enum BuildStep: Sendable {
    /// Made and, if it has hooks this graph runs, started.
    case created(slot: Int, box: _AnyBox, hooks: InstanceHooks?, factory: Duration, didAdd: Duration?)
    /// Made, handing out an instance whose hooks the service at `holder` runs.
    case aliased(slot: Int, box: _AnyBox, holder: Int, factory: Duration)
    case failed(slot: Int, ServiceGraphError)
    /// The factory ran past the factory timeout; the build abandons it.
    case factoryTimedOut(slot: Int, limit: Duration)
}
