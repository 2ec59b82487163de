import ServiceGraph
import ServiceGraphTestSupport

/// What the model expects a key to resolve to.
enum ExpectedValue {
    /// That instance.
    case serial(Int)
    /// A new instance made by that provider.
    case fresh(label: String)
    /// The model does not know (an instance the scope has not made).
    case unknown
}

extension StatefulRun {
    /// The instance `key` resolves to in `graph` (and `scope`).
    func expectedValue(of key: ModelKey, in graph: GraphModel, scope: ScopeModel?) -> ExpectedValue {
        guard let entry = graph.spec.entries[key] else { return .unknown }
        if entry.lifetime == .singleton { return graph.singletons[key].map(ExpectedValue.serial) ?? .unknown }
        switch entry.source {
        case .alias(let target): return expectedValue(of: target, in: graph, scope: scope)
        case .make(let provider):
            if entry.lifetime == .transient { return .fresh(label: provider.label) }
            return scope?.values[key].map(ExpectedValue.serial) ?? .unknown
        case .value, .borrowed: return .unknown
        }
    }

    /// Checks that a factory of `graph` made `record`, with the dependencies the model expects.
    func checkDependencies(of record: InstanceRecord, in graph: GraphModel, scope: ScopeModel?, firstSerial: Int) throws
    {
        guard let provider = providers[record.label] else { return }
        let current: String
        if let entry = graph.spec.entries[provider.key], case .make(let own) = entry.source {
            current = own.label
        } else {
            current = "none"
        }
        guard current == provider.label else {
            if case .double(let index, _) = provider.key, current == "none" {
                throw ModelViolation(
                    "second double: \(graph.name) made \(record.name), a test double of k\(index) that a later double replaced"
                )
            }
            throw ModelViolation(
                "wrong provider: \(graph.name) made \(record.name) with \(provider.label), but its provider of \(provider.key) is \(current)"
            )
        }
        for (position, key) in provider.dependencies.enumerated() where position < record.dependencies.count {
            let actual = record.dependencies[position]
            switch expectedValue(of: key, in: graph, scope: scope) {
            case .serial(let expected):
                if actual != expected {
                    let got = journal.record(actual)?.name ?? "#\(actual)"
                    let want = journal.record(expected)?.name ?? "#\(expected)"
                    throw ModelViolation(
                        "wiring: \(record.name) in \(graph.name) received \(got) for \(key), expected \(want)"
                    )
                }
            case .fresh(let label):
                let dependency = journal.record(actual)
                if dependency?.label != label || actual < firstSerial {
                    throw ModelViolation(
                        "wiring: \(record.name) in \(graph.name) received \(dependency?.name ?? "#\(actual)") for \(key), expected a new instance of \(label)"
                    )
                }
            case .unknown:
                break
            }
        }
    }

    /// Learns the instances a scope made since `firstSerial` (one per scoped key, kept once started)
    /// and checks their dependencies and hooks.
    func syncScope(_ scope: ScopeModel, from firstSerial: Int) throws {
        let made = journal.records(from: firstSerial).filter { $0.owner == .scope(scope.id) }
        for record in made where record.isOwned {
            guard let provider = providers[record.label] else { continue }
            if record.hasHooks && record.didAddCalls == 0 {
                throw ModelViolation(
                    "hooks of scoped instance: didAdd never ran on \(record.name), made by \(scope.name)"
                )
            }
            guard !record.hasHooks || record.didAdd == .succeeded else { continue }
            if let existing = scope.values[provider.key], existing != record.serial {
                throw ModelViolation(
                    "scope: \(scope.name) made two instances of \(provider.key): #\(existing) and \(record.name)"
                )
            }
            scope.values[provider.key] = record.serial
        }
        for record in made {
            try checkDependencies(of: record, in: scope.graph, scope: scope, firstSerial: firstSerial)
        }
    }

    /// Checks a value a resolve returned against the model.
    @discardableResult
    func checkValue(
        _ value: GeneratedService,
        of key: ModelKey,
        in graph: GraphModel,
        scope: ScopeModel?,
        firstSerial: Int,
        sequential: Bool
    ) throws -> String {
        let place = scope?.name ?? graph.name
        guard let service = value as? ModelService else {
            throw ModelViolation("resolve: \(place).resolve(\(key)) returned something that is not a model service")
        }
        let record = journal.record(service.serial)
        let summary = record?.name ?? "#\(service.serial)"
        if sequential, let record, record.willRemoveCalls > 0 {
            throw ModelViolation("used after willRemove: \(place).resolve(\(key)) returned \(summary), already removed")
        }
        let label = graph.spec.label(of: key)
        if service.label != label {
            throw ModelViolation(
                "wrong provider: \(place).resolve(\(key)) returned \(summary), but \(graph.name) provides \(key) with \(label)"
            )
        }
        switch expectedValue(of: key, in: graph, scope: scope) {
        case .serial(let expected):
            if service.serial != expected {
                throw ModelViolation(
                    "resolve: \(place).resolve(\(key)) returned \(summary), expected \(journal.record(expected)?.name ?? "#\(expected)")"
                )
            }
        case .fresh:
            if service.serial < firstSerial {
                throw ModelViolation(
                    "resolve: \(place).resolve(\(key)) returned the old \(summary), expected a new one"
                )
            }
        case .unknown:
            throw ModelViolation("scope: \(place).resolve(\(key)) returned \(summary), which the scope did not make")
        }
        return summary
    }

    /// Checks a thrown error against the one expected: its code, and the key it names.
    func checkError(_ error: any Error, expected: ExpectedProblem, doing what: String) throws -> String {
        guard let error = error as? ServiceGraphError else {
            throw ModelViolation("error: \(what) threw \(error), not a ServiceGraphError")
        }
        let problem = error.problems[0]
        let names = expected.names.isEmpty ? expected.key.map { [name($0)] } ?? [] : expected.names
        if problem.code != expected.code || (!names.isEmpty && !names.contains(problem.key)) {
            if expected.code == .graphShutDown || expected.code == .scopeClosed {
                let kind = expected.code == .graphShutDown ? "resolve after shutdown" : "resolve after close"
                throw ModelViolation("\(kind): \(what) threw \(summary(error.problems)), expected \(expected)")
            }
            throw ModelViolation(
                "error names the wrong key or code: \(what) threw \(summary(error.problems)), expected \(expected)"
            )
        }
        return "\(problem.code) \(shortName(problem.key))"
    }

    // MARK: Problems

    func shortName(_ name: String) -> String {
        handles.first { $0.value.name == name }.map { $0.key.description } ?? name
    }

    func summary(_ problems: [ServiceGraphError.Problem]) -> String {
        "[" + problems.map { "\($0.code) \(shortName($0.key))" }.joined(separator: ", ") + "]"
    }

    private func matches(_ problem: ServiceGraphError.Problem, _ expected: ExpectedProblem) -> Bool {
        guard problem.code == expected.code else { return false }
        guard let key = expected.key else { return true }
        return expected.names.isEmpty ? problem.key == name(key) : expected.names.contains(problem.key)
    }

    /// nil when `problems` are exactly `required`, plus any of `optional`; else what differs.
    func mismatch(
        _ problems: [ServiceGraphError.Problem],
        required: [ExpectedProblem],
        optional: [ExpectedProblem] = []
    ) -> String? {
        var missing = required
        var maybe = optional
        var unexpected: [ServiceGraphError.Problem] = []
        for problem in problems {
            if let index = missing.firstIndex(where: { matches(problem, $0) }) {
                missing.remove(at: index)
            } else if let index = maybe.firstIndex(where: { matches(problem, $0) }) {
                maybe.remove(at: index)
            } else {
                unexpected.append(problem)
            }
        }
        guard !missing.isEmpty || !unexpected.isEmpty else { return nil }
        var text = "reported \(summary(problems)), expected \(required)"
        if !optional.isEmpty { text += " (and maybe \(optional))" }
        return text
    }

    /// The problems releasing these instances must report: their `willRemove` throws or hangs.
    func removalProblems(_ records: [InstanceRecord]) -> [ExpectedProblem] {
        records.compactMap { record in
            guard let provider = providers[record.label] else { return nil }
            switch record.willRemoveFault {
            case .throwing: return ExpectedProblem(.willRemoveFailed, provider.key)
            case .hanging: return ExpectedProblem(.hookTimedOut, provider.key)
            default: return nil
            }
        }
    }

    // MARK: Instances

    /// The started instances (with hooks, `didAdd` done) `owner` made whose `willRemove` has not run.
    func owed(by owner: ModelOwner) -> [InstanceRecord] {
        journal.records.filter { $0.owner == owner && $0.isStarted && $0.willRemove == .notRun }
    }

    /// Checks that these instances' `willRemove` ran (or hangs, abandoned).
    func checkRemoved(_ records: [InstanceRecord], by what: String) throws {
        for record in records {
            guard let now = journal.record(record.serial) else { continue }
            if !now.hasFinishedWillRemove && !(now.willRemove == .running && now.willRemoveFault.isHanging) {
                throw ModelViolation("\(what): \(now.name) is still owed its willRemove (\(now.willRemove))")
            }
        }
    }

    /// Waits until the instances are released; returns those still alive after the deadline.
    func waitUntilReleased(_ serials: [Int], within limit: Duration = StatefulRun.releaseDeadline) async -> [String] {
        let deadline = ContinuousClock.now + limit
        while true {
            let alive = serials.compactMap { journal.record($0) }.filter(\.isAlive)
            if alive.isEmpty { return [] }
            if ContinuousClock.now >= deadline {
                return alive.map(\.name)
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Waits until `condition` holds; false when it still does not after the deadline.
    func waitUntil(within limit: Duration = StatefulRun.releaseDeadline, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// Fails on what the hooks and factories recorded: the journal's violations, and cleanup that ran
    /// in a cancelled task.
    func checkJournal(since firstSerial: Int, allowingCancelledCleanup: Bool) throws {
        let violations = journal.takeViolations()
        if !violations.isEmpty { throw ModelViolation(violations.joined(separator: "; ")) }
        for record in journal.records where record.willRemoveSawCancellation {
            guard reportedCancellations.insert(record.serial).inserted, !allowingCancelledCleanup else { continue }
            throw ModelViolation(
                "cancelled cleanup: willRemove of \(record.name) ran in a cancelled task and was cut short"
            )
        }
    }

    // MARK: Released graphs

    /// Checks the graphs that are no longer alive: they are gone, and one dropped without shutdown
    /// while owing hooks said so.
    func checkReleasedGraphs() async throws {
        for graph in graphs.values.sorted(by: { $0.id < $1.id }) where !graph.isAlive && !graph.releaseChecked {
            graph.releaseChecked = true
            if !(await waitUntil { !graph.weakGraph.isAlive }) {
                throw ModelViolation("leak: \(graph.name) was dropped but is still alive")
            }
            guard !graph.isShutDown else { continue }
            let owed = graph.owedWhenDropped.compactMap { journal.record($0) }.filter { !$0.hasFinishedWillRemove }
            guard !owed.isEmpty else { continue }
            let names = owed.compactMap { providers[$0.label].map { name($0.key) } }
            // A weak reference reads nil as soon as the graph's deinit begins, before it reports.
            _ = await waitUntil(within: .seconds(5)) {
                !journal.events(of: graph.id, kind: .droppedWithoutShutdown).isEmpty
            }
            let events = journal.events(of: graph.id, kind: .droppedWithoutShutdown)
            guard let event = events.first else {
                throw ModelViolation(
                    "dropped graph: \(graph.name) was released without shutdown owing willRemove to \(owed.map(\.name)), and sent no droppedWithoutShutdown event"
                )
            }
            if events.count > 1 || !names.allSatisfy({ event.key?.contains($0) == true }) {
                throw ModelViolation(
                    "dropped graph: \(graph.name)'s droppedWithoutShutdown events \(events.map { $0.key ?? "" }) do not name \(owed.map(\.name))"
                )
            }
        }
    }

    /// The end of a sequence: everything dropped, nothing alive, every owed `willRemove` ran.
    func checkEnd() async throws {
        builders = [:]
        for scope in scopes.values { scope.scope = nil }
        for graph in graphs.values { graph.graph = nil }
        try await checkReleasedGraphs()
        let serials = journal.records.map(\.serial)
        let left = await waitUntilReleased(serials)
        if !left.isEmpty {
            throw ModelViolation("leak: alive at the end: \(left.joined(separator: ", "))")
        }
        if !(await waitUntil { self.scopes.values.allSatisfy { !$0.weakScope.isAlive } }) {
            let alive = scopes.values.filter(\.weakScope.isAlive).map(\.name).sorted()
            throw ModelViolation("leak: scopes alive at the end: \(alive)")
        }
        for record in journal.records where record.isStarted && !record.isAbandoned && !record.hasFinishedWillRemove {
            if record.willRemove == .running && record.willRemoveFault.isHanging { continue }
            throw ModelViolation("willRemove never ran on \(record.name)")
        }
        try checkJournal(since: 0, allowingCancelledCleanup: false)
    }
}
