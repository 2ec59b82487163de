import ServiceGraph
import ServiceGraphTestSupport

/// A broken invariant: ends the sequence.
struct ModelViolation: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// The operations of one sequence so far, readable while the sequence runs (by the watchdog).
final class ModelTrace: Sendable {
    private let lines = Locked<[String]>([])
    private let current = Locked<(index: Int, start: ContinuousClock.Instant)?>(nil)

    func begin(_ line: String) -> Int {
        let index = lines.withLock { lines in
            lines.append(line)
            return lines.count
        }
        current.withLock { $0 = (index, .now) }
        return index
    }

    func end(_ index: Int, outcome: String) {
        lines.withLock { lines in
            if !outcome.isEmpty { lines[index - 1] += " → " + outcome }
        }
        current.withLock { $0 = nil }
    }

    /// The operation running now and how long it has been running.
    var running: (index: Int, elapsed: Duration)? {
        current.withLock { current in current.map { ($0.index, $0.start.duration(to: .now)) } }
    }

    var text: String {
        lines.withLock { lines in
            lines.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
        }
    }
}

/// One random sequence of operations on real builders, graphs and scopes, each checked against the
/// reference model (``GraphSpec``, ``GraphModel``, ``ScopeModel``) and the journal's invariants.
///
/// `@unchecked Sendable`: a run is driven by one task at a time; only its ``trace`` is read from
/// another task (the watchdog), through a lock.
final class StatefulRun: @unchecked Sendable {
    let seed: UInt64
    let journal = ModelJournal()
    let trace = ModelTrace()
    var builders: [Int: BuilderModel] = [:]
    /// Every graph the sequence built, including dropped ones.
    var graphs: [Int: GraphModel] = [:]
    var scopes: [Int: ScopeModel] = [:]
    var handles: [ModelKey: KeyHandle] = [:]
    /// Every provider by label.
    var providers: [String: ProviderSpec] = [:]
    var nextBuilder = 0
    var nextGraph = 0
    var nextScope = 0
    var nextLabel = 0
    /// The kinds of operation the sequence ran (for the generator's coverage).
    var kindsRun: Set<String> = []
    /// Scopes the end of the sequence leaves open for their graph's shutdown.
    var leftOpen: Set<Int> = []
    /// Instances whose cancelled cleanup was already reported (or allowed).
    var reportedCancellations: Set<Int> = []
    /// How long a hook or factory that hangs on purpose may run.
    static let hangTimeout = Duration.milliseconds(250)
    /// How long a release that happens in the background may take before the test calls it a leak.
    static let releaseDeadline = Duration.seconds(15)

    init(seed: UInt64) {
        self.seed = seed
    }

    var heldGraphs: [GraphModel] { graphs.values.filter(\.isHeld).sorted { $0.id < $1.id } }
    var heldScopes: [ScopeModel] { scopes.values.filter { $0.scope != nil }.sorted { $0.id < $1.id } }

    // MARK: Running

    /// Runs the sequence; throws the first violation.
    func run() async throws {
        var random = SplitMix64(seed: seed)
        let length = Int.random(in: 6...22, using: &random)
        for _ in 0..<length {
            let operation = nextOperation(&random)
            try await perform(operation)
        }
        while let operation = nextClosingOperation(&random) {
            try await perform(operation)
        }
        let index = trace.begin("end: everything dropped")
        try await checkEnd()
        trace.end(index, outcome: "ok")
    }

    func perform(_ operation: StatefulOperation) async throws {
        let index = trace.begin(operation.description)
        kindsRun.insert(operation.kind)
        let firstSerial = journal.nextSerial
        var outcome = ""
        do {
            outcome = try await execute(operation)
            try checkJournal(since: firstSerial, allowingCancelledCleanup: operation.kind == "cancelBuild")
        } catch let violation as ModelViolation {
            trace.end(index, outcome: outcome)
            // What a hook or factory saw is the root cause of what the operation then found.
            let seen = journal.takeViolations()
            throw seen.isEmpty ? violation : ModelViolation(seen.joined(separator: "; "))
        }
        trace.end(index, outcome: outcome)
    }

    private func execute(_ operation: StatefulOperation) async throws -> String {
        journal.setCurrentOwner(nil)
        switch operation {
        case .newBuilder(let id, let plans, let generous):
            return newBuilder(id: id, plans: plans, generousTimeouts: generous)
        case .copyBuilder(let id, let from, let overrides, let use, let keep):
            return try await copyBuilder(id: id, from: from, overrides: overrides, use: use, keep: keep)
        case .build(let graph, let builder, let validateFirst):
            let model = try builderModel(builder)
            if validateFirst { try validate(model.builder, spec: model.spec, name: "B\(builder)") }
            return try await build(graph: graph, builder: model.builder, spec: model.spec, parent: nil)
        case .buildChild(let graph, let parent, let additions, let shutDownParentFirst):
            return try await buildChild(
                graph,
                of: parent,
                additions: additions,
                shutDownParentFirst: shutDownParentFirst
            )
        case .makeScope(let scope, let graph):
            return try makeScope(scope, in: graph)
        case .resolveInScope(let scope, let key):
            return try await resolve(key, inScope: scope)
        case .resolveInGraph(let graph, let key, let synchronously):
            return try await resolve(key, inGraph: graph, synchronously: synchronously)
        case .close(let scope):
            return try await close(scope)
        case .dropScope(let scope, let wait):
            return try await dropScope(scope, waitForRelease: wait)
        case .shutdown(let graph):
            return try await shutdown(graph)
        case .dropGraph(let graph):
            return try await dropGraph(graph)
        case .cancelBuild(let graph, let builder, let delay):
            return try await cancelBuild(graph: graph, builder: builder, after: delay)
        case .cancelShutdown(let graph, let delay):
            return try await cancelShutdown(graph, after: delay)
        case .cancelClose(let scope, let delay):
            return try await cancelClose(scope, after: delay)
        case .concurrently(let scope, let resolves, let close, let shutdown):
            return try await concurrently(scope: scope, resolves: resolves, close: close, shutdown: shutdown)
        }
    }

    // MARK: Names and handles

    func handle(_ key: ModelKey) -> KeyHandle {
        if let handle = handles[key] { return handle }
        guard case .plain(let index) = key else { preconditionFailure("the handle of \(key) was never made") }
        let handle = KeyHandle.generated(index)
        handles[key] = handle
        return handle
    }

    func name(_ key: ModelKey) -> String { handle(key).name }

    func makeLabel(_ prefix: String) -> String {
        defer { nextLabel += 1 }
        return "\(prefix)\(nextLabel)"
    }

    func builderModel(_ id: Int) throws -> BuilderModel {
        guard let model = builders[id] else { throw ModelViolation("internal: no builder B\(id)") }
        return model
    }

    func graphModel(_ id: Int) throws -> GraphModel {
        guard let model = graphs[id] else { throw ModelViolation("internal: no graph G\(id)") }
        return model
    }

    func scopeModel(_ id: Int) throws -> ScopeModel {
        guard let model = scopes[id] else { throw ModelViolation("internal: no scope S\(id)") }
        return model
    }

    // MARK: Providers

    /// Provides or overrides `spec.key` with a factory that makes a model instance.
    func register(_ spec: ProviderSpec, _ mode: ModelWiring.Mode, into builder: inout ServiceGraph.Builder) {
        providers[spec.label] = spec
        let journal = self.journal
        let blueprint = spec.blueprint
        let fault = spec.factory
        let make: ModelWiring.Make = { dependencies in
            if fault != .none && fault != .throwing {
                journal.factoryCalled(
                    blueprint.label,
                    key: blueprint.key,
                    with: dependencies.compactMap { ($0 as? ModelService)?.serial },
                    afterWaiting: true
                )
            }
            if fault == .throwing { throw TestFailure("the factory of \(blueprint.label) failed on purpose") }
            if blueprint.hasHooks { return HookedModelService(blueprint, dependencies: dependencies, journal: journal) }
            return ModelService(blueprint, dependencies: dependencies, journal: journal)
        }
        let body: ModelWiring.Body =
            spec.isAsync
            ? .async { dependencies in
                journal.factoryCalled(
                    blueprint.label,
                    key: blueprint.key,
                    with: dependencies.compactMap { ($0 as? ModelService)?.serial }
                )
                try await fault.wait()
                return try make(dependencies)
            }
            : .sync { dependencies in
                journal.factoryCalled(
                    blueprint.label,
                    key: blueprint.key,
                    with: dependencies.compactMap { ($0 as? ModelService)?.serial }
                )
                return try make(dependencies)
            }
        ModelWiring.register(spec.key.index, mode, dependsOn: spec.dependencies.map(\.index), body, into: &builder)
    }

    func add(_ plan: AdditionPlan, into builder: inout ServiceGraph.Builder, spec: inout GraphSpec) {
        switch plan {
        case .make(let provider):
            register(provider, .provide(provider.lifetime), into: &builder)
            spec.entries[provider.key] = KeyEntry(lifetime: provider.lifetime, source: .make(provider))
        case .alias(let key, let lifetime, let target):
            ModelWiring.register(
                key.index,
                .provide(lifetime),
                dependsOn: [target.index],
                .sync { $0[0] },
                into: &builder
            )
            spec.entries[key] = KeyEntry(lifetime: lifetime, source: .alias(target))
        }
    }

    /// Sets the timeouts the spec needs: short ones when something hangs on purpose.
    func applyTimeouts(to spec: inout GraphSpec, builder: inout ServiceGraph.Builder, generous: Bool) {
        spec.hookTimeout = spec.hasHangingHook ? Self.hangTimeout : generous ? .seconds(10) : nil
        spec.factoryTimeout = spec.hasHangingFactory ? Self.hangTimeout : generous ? .seconds(10) : nil
        builder.hookTimeout = spec.hookTimeout
        builder.factoryTimeout = spec.factoryTimeout
    }

    // MARK: Builders

    private func newBuilder(id: Int, plans: [AdditionPlan], generousTimeouts: Bool) -> String {
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        var spec = GraphSpec()
        for plan in plans { add(plan, into: &builder, spec: &spec) }
        applyTimeouts(to: &spec, builder: &builder, generous: generousTimeouts)
        builders[id] = BuilderModel(id: id, builder: builder, spec: spec)
        return ""
    }

    private func copyBuilder(
        id: Int,
        from source: Int,
        overrides: [OverridePlan],
        use: BuilderUse,
        keep: Bool
    ) async throws -> String {
        let original = try builderModel(source)
        var builder = original.builder
        var spec = original.spec
        for plan in overrides {
            switch plan {
            case .factory(let provider):
                register(provider, .override(nil), into: &builder)
                spec.entries[provider.key]?.source = .make(provider)
            case .unknown(let provider):
                register(provider, .override(nil), into: &builder)
                spec.unknownOverrides.append(provider.key)
            case .value(let index, let label):
                let value = ModelService(
                    ModelBlueprint(key: "k\(index)", index: index, label: label, isOwned: true, hasHooks: false),
                    dependencies: [],
                    journal: journal
                )
                ModelWiring.override(index, with: value, into: &builder)
                spec.entries[.plain(index)] = KeyEntry(
                    lifetime: .singleton,
                    source: .value(label: label, serial: value.serial)
                )
            case .double(let index, let hooked, let label):
                let key = ModelKey.double(of: index, hooked: hooked)
                let double = ProviderSpec(
                    label: label,
                    key: key,
                    lifetime: .singleton,
                    dependencies: [],
                    isAsync: false,
                    hasHooks: hooked
                )
                providers[label] = double
                handles[key] = ModelWiring.overrideWithDouble(index, double.blueprint, journal: journal, into: &builder)
                // The last double of a key replaces the earlier ones, whose keys leave the graph.
                spec.entries[.double(of: index, hooked: !hooked)] = nil
                spec.entries[key] = KeyEntry(lifetime: .singleton, source: .make(double))
                spec.entries[.plain(index)]?.source = .alias(key)
            }
        }
        let generous = original.spec.hookTimeout == .seconds(10) || original.spec.factoryTimeout == .seconds(10)
        applyTimeouts(to: &spec, builder: &builder, generous: generous)
        var outcome = ""
        switch use {
        case .none: break
        case .validate:
            try validate(builder, spec: spec, name: "B\(id)")
            outcome = "valid: \(spec.unknownOverrides.isEmpty)"
        case .build(let graph):
            outcome = try await build(graph: graph, builder: builder, spec: spec, parent: nil)
        case .validateAndBuild(let graph):
            try validate(builder, spec: spec, name: "B\(id)")
            outcome = try await build(graph: graph, builder: builder, spec: spec, parent: nil)
        }
        if keep { builders[id] = BuilderModel(id: id, builder: builder, spec: spec) }
        return outcome
    }

    /// The model's builders never provide a key twice: a second override (or test double) of a key
    /// replaces the first.
    func checkNoDuplicate(_ error: ServiceGraphError, doing what: String) throws {
        guard let duplicate = error.problems.first(where: { $0.code == .duplicateProvider }) else { return }
        throw ModelViolation(
            "second double: \(what) reported duplicate provider \(shortName(duplicate.key)); a second override of a key (a second test double too) replaces the first"
        )
    }

    /// The problems validating `spec` must report, exactly.
    func validationProblems(_ spec: GraphSpec) -> [ExpectedProblem] {
        spec.unknownOverrides.map { ExpectedProblem(.overrideOfUnknownKey, $0) }
    }

    func validate(_ builder: ServiceGraph.Builder, spec: GraphSpec, name builderName: String) throws {
        let expected = validationProblems(spec)
        do {
            try builder.validate()
            if !expected.isEmpty {
                throw ModelViolation(
                    "builder copy: \(builderName) validated, but it must fail with \(expected) (its own overrides)"
                )
            }
        } catch let error as ServiceGraphError {
            try checkNoDuplicate(error, doing: "validating \(builderName)")
            if let mismatch = mismatch(error.problems, required: expected) {
                throw ModelViolation("builder copy: validating \(builderName) \(mismatch)")
            }
        }
    }

    // MARK: Builds

    /// Builds a graph from `builder` (with the given spec) and checks it against the model; keeps it
    /// when it builds.
    @discardableResult
    func build(
        graph id: Int,
        builder: ServiceGraph.Builder,
        spec: GraphSpec,
        parent: GraphModel?,
        cancelAfter delay: ModelDelay? = nil
    ) async throws -> String {
        var builder = builder
        let journal = self.journal
        builder.requiresShutdown = false
        builder.eventHandler = { event in
            journal.recordEvent(ModelEvent(graph: id, kind: event.kind, key: event.key))
        }
        journal.setCurrentOwner(.graph(id))
        defer { journal.setCurrentOwner(nil) }
        let firstSerial = journal.nextSerial
        let building = Task { [builder] in
            await ModelContext.$owner.withValue(.graph(id)) {
                do throws(ServiceGraphError) {
                    return Result<ServiceGraph, ServiceGraphError>.success(try await builder.build())
                } catch {
                    return .failure(error)
                }
            }
        }
        if let delay {
            await delay.wait()
            building.cancel()
        }
        let result = await building.value
        let invalid = validationProblems(spec)
        let parentShutDown = parent?.isShutDown == true
        let failures = spec.buildFailures
        switch result {
        case .success(let graph):
            if !invalid.isEmpty {
                throw ModelViolation(
                    "builder copy: G\(id) was built, but its builder must fail validation with \(invalid)"
                )
            }
            if parentShutDown {
                throw ModelViolation(
                    "child of a shut-down parent: G\(id) was built although its parent \(parent!.name) is shut down (expected graphShutDown)"
                )
            }
            if !failures.isEmpty {
                let made = journal.records(from: firstSerial)
                for failure in failures where failure.code == .didAddFailed || failure.code == .hookTimedOut {
                    let label = spec.label(of: failure.key!)
                    if let record = made.first(where: { $0.label == label }), record.didAddCalls == 0 {
                        throw ModelViolation(
                            "hooks of own singleton: didAdd never ran on \(record.name), an own singleton of G\(id), so its failing didAdd went unnoticed and G\(id) was built"
                        )
                    }
                }
                throw ModelViolation("build: G\(id) was built, but it must fail with one of \(failures)")
            }
            let model = GraphModel(id: id, spec: spec, parent: parent, graph: graph)
            graphs[id] = model
            parent?.children.append(model)
            try checkBuilt(model, firstSerial: firstSerial)
            return "ok"
        case .failure(let error):
            try checkNoDuplicate(error, doing: "building G\(id)")
            let cancelled = delay != nil && error.problems.first?.code == .buildCancelled
            if !invalid.isEmpty {
                if let mismatch = mismatch(error.problems, required: invalid) {
                    throw ModelViolation("builder copy: building G\(id) \(mismatch)")
                }
            } else if parentShutDown {
                if error.problems.first?.code != .graphShutDown {
                    throw ModelViolation(
                        "child of a shut-down parent: building G\(id) threw \(summary(error.problems)), expected graphShutDown"
                    )
                }
            } else {
                let problems = cancelled ? Array(error.problems.dropFirst()) : error.problems
                if problems.isEmpty && !cancelled {
                    throw ModelViolation("build: G\(id) failed without a problem")
                }
                if !cancelled && failures.isEmpty {
                    throw ModelViolation(
                        "builder copy: building G\(id) failed with \(summary(error.problems)), but none of its builder's providers fails"
                    )
                }
                // Releasing what started may fail too: those failures are part of the build's error.
                let made = journal.records(from: firstSerial).filter { $0.owner == .graph(id) && $0.isStarted }
                let releases = removalProblems(made)
                if let unexpected = problems.first(where: { problem in
                    !(failures + releases).contains { $0.code == problem.code && name($0.key!) == problem.key }
                }) {
                    throw ModelViolation(
                        "error names the wrong key: building G\(id) reported \(unexpected.code) for \(unexpected.key); expected one of \(failures)"
                    )
                }
            }
            try await checkFailedBuild(id, firstSerial: firstSerial)
            return "failed: \(summary(error.problems))"
        }
    }

    private func buildChild(
        _ id: Int,
        of parentID: Int,
        additions: [AdditionPlan],
        shutDownParentFirst: Bool
    ) async throws -> String {
        let parent = try graphModel(parentID)
        guard let parentGraph = parent.graph else { throw ModelViolation("internal: G\(parentID) is not held") }
        var builder = parentGraph.makeChildBuilder()
        var spec = GraphSpec.child(of: parent)
        for plan in additions { add(plan, into: &builder, spec: &spec) }
        applyTimeouts(to: &spec, builder: &builder, generous: parent.spec.hookTimeout == .seconds(10))
        var outcome = ""
        if shutDownParentFirst && !parent.isShutDown {
            outcome = "parent: " + (try await shutdownChecked(parent)) + "; "
        }
        return outcome + (try await build(graph: id, builder: builder, spec: spec, parent: parent))
    }

    private func cancelBuild(graph id: Int, builder builderID: Int, after delay: ModelDelay) async throws -> String {
        let model = try builderModel(builderID)
        var outcome = try await build(
            graph: id,
            builder: model.builder,
            spec: model.spec,
            parent: nil,
            cancelAfter: delay
        )
        // Whatever the cancellation did, the model state afterwards is the same: no graph.
        if let graph = graphs[id] {
            outcome += "; " + (try await shutdownChecked(graph))
            graph.graph = nil
            try await checkReleasedGraphs()
        }
        return outcome
    }

    /// Checks a graph that just built: every singleton is the model's (by provider, identity and
    /// dependencies), each made once, and each of its own with hooks got `didAdd`.
    private func checkBuilt(_ model: GraphModel, firstSerial: Int) throws {
        guard let graph = model.graph else { return }
        let spec = model.spec
        for key in spec.keys where spec.lifetime(of: key) == .singleton {
            let value: GeneratedService
            do {
                value = try handle(key).read(graph)
            } catch {
                throw ModelViolation("builder copy: \(model.name)[\(key)] is not there: \(describe(error))")
            }
            guard let service = value as? ModelService else {
                throw ModelViolation("build: \(model.name)[\(key)] is not a model service")
            }
            model.singletons[key] = service.serial
        }
        var madeBy: [Int: ModelKey] = [:]
        for key in spec.keys where spec.lifetime(of: key) == .singleton {
            guard let serial = model.singletons[key], let entry = spec.entries[key] else { continue }
            let record = journal.record(serial)
            switch entry.source {
            case .make(let provider):
                if record?.label != provider.label {
                    throw ModelViolation(
                        "builder copy: \(model.name)[\(key)] was made by \(record?.label ?? "?"), but the graph's provider of \(key) is \(provider.label)"
                    )
                }
                if record?.owner != .graph(model.id) {
                    throw ModelViolation(
                        "build: \(model.name)[\(key)] is \(record?.name ?? "?"), made for \(record?.owner?.description ?? "nobody")"
                    )
                }
                if let other = madeBy.updateValue(key, forKey: serial) {
                    throw ModelViolation("build: \(model.name) hands out one instance for \(other) and \(key)")
                }
                if provider.hasHooks, let record, record.didAddCalls != 1 || record.didAdd != .succeeded {
                    throw ModelViolation(
                        "hooks of own singleton: \(model.name)'s own singleton \(record.name) got didAdd \(record.didAddCalls) times (\(record.didAdd))"
                    )
                }
            case .alias(let target):
                if serial != model.singletons[target] {
                    throw ModelViolation("build: \(model.name)[\(key)] is not the instance of \(target), its alias")
                }
            case .value(let label, let expected):
                if serial != expected {
                    throw ModelViolation(
                        "builder copy: \(model.name)[\(key)] is \(record?.name ?? "?"), not the value \(label) it is overridden with"
                    )
                }
            case .borrowed(let parent):
                if serial != parent.model.singletons[key] {
                    throw ModelViolation(
                        "child: \(model.name)[\(key)] is not its parent \(parent.model.name)'s instance"
                    )
                }
            }
        }
        let made = journal.records(from: firstSerial)
        for provider in spec.ownSingletons {
            let count = made.filter { $0.label == provider.label && $0.owner == .graph(model.id) }.count
            if count != 1 {
                throw ModelViolation("build: \(model.name) made \(provider.key) (\(provider.label)) \(count) times")
            }
        }
        // Work a cancelled build abandoned may still finish now, for its own graph: not this one's.
        for record in made where record.owner == .graph(model.id) {
            try checkDependencies(of: record, in: model, scope: nil, firstSerial: firstSerial)
        }
    }

    /// After a failed build: what started was released (its `willRemove` ran), and nothing it made
    /// stays alive.
    private func checkFailedBuild(_ id: Int, firstSerial: Int) async throws {
        let serials = journal.records(from: firstSerial).filter { $0.owner == .graph(id) }.map(\.serial)
        // What finished starting after the build gave up may be released in the background.
        let left = await waitUntilReleased(serials)
        if !left.isEmpty {
            throw ModelViolation("leak: the failed build of G\(id) left \(left.joined(separator: ", ")) alive")
        }
        for record in serials.compactMap({ journal.record($0) }) where record.isStarted {
            if !record.hasFinishedWillRemove && !record.willRemoveFault.isHanging {
                throw ModelViolation("failed build: \(record.name) started but was released without its willRemove")
            }
        }
    }

}
