import ServiceGraph
import ServiceGraphTestSupport

/// What one task of a concurrent operation ended with.
private enum ConcurrentOutcome: Sendable {
    case resolved(Int, Result<GeneratedService, any Error>)
    case closed([ServiceGraphError.Problem])
    case shutDown([ServiceGraphError.Problem])
}

extension StatefulRun {
    func shutdown(_ id: Int) async throws -> String {
        try await shutdownChecked(try graphModel(id))
    }

    func cancelShutdown(_ id: Int, after delay: ModelDelay) async throws -> String {
        try await shutdownChecked(try graphModel(id), cancelAfter: delay)
    }

    func cancelClose(_ id: Int, after delay: ModelDelay) async throws -> String {
        try await close(id, cancelAfter: delay)
    }

    private func shutdownProblems(of graph: ServiceGraph) async -> [ServiceGraphError.Problem] {
        do throws(ServiceGraphError) {
            try await graph.shutdown()
            return []
        } catch {
            return error.problems
        }
    }

    /// The started instances a graph's shutdown must release (the graph's, its open scopes', its live
    /// children's), and those it may release (scopes dropped without close).
    private func owedByShutdown(of family: [GraphModel]) -> (required: [InstanceRecord], optional: [InstanceRecord]) {
        var required: [InstanceRecord] = []
        var optional: [InstanceRecord] = []
        for graph in family {
            required += owed(by: .graph(graph.id))
            for scope in graph.scopes {
                switch scope.state {
                case .open: required += owed(by: .scope(scope.id))
                case .dropped: optional += owed(by: .scope(scope.id))
                case .closed: break
                }
            }
        }
        return (required, optional)
    }

    private func markShutDown(_ family: [GraphModel]) {
        for graph in family {
            graph.state = .shutDown
            graph.shutdownProblems = nil
            for scope in graph.scopes { scope.state = .closed }
        }
    }

    /// The order a shutdown releases in, as blocks that must not interleave: live children first,
    /// newest first (each in the same order), then open scopes, newest first, then the singletons.
    private func shutdownBlocks(of graph: GraphModel) -> [(name: String, serials: [Int])] {
        var blocks: [(name: String, serials: [Int])] = []
        for child in graph.children.filter({ $0.isAlive && !$0.isShutDown }).sorted(by: { $0.id > $1.id }) {
            blocks += shutdownBlocks(of: child)
        }
        for scope in graph.scopes.filter({ $0.state == .open }).sorted(by: { $0.id > $1.id }) {
            blocks.append((scope.name, owed(by: .scope(scope.id)).map(\.serial)))
        }
        blocks.append(("\(graph.name)'s singletons", owed(by: .graph(graph.id)).map(\.serial)))
        return blocks
    }

    private func checkOrder(_ blocks: [(name: String, serials: [Int])], since step: Int, of graph: GraphModel) throws {
        var started: [(step: Int, block: Int, name: String)] = []
        for (index, block) in blocks.enumerated() {
            for serial in block.serials {
                guard let record = journal.record(serial), let start = record.willRemoveStartedAt, start > step else {
                    continue
                }
                started.append((start, index, record.name))
            }
        }
        started.sort { $0.step < $1.step }
        for (earlier, later) in zip(started, started.dropFirst()) where later.block < earlier.block {
            throw ModelViolation(
                "shutdown order: \(graph.name).shutdown() removed \(earlier.name) (\(blocks[earlier.block].name)) before \(later.name) (\(blocks[later.block].name))"
            )
        }
    }

    /// Shuts a graph down (cancelling the task after `cancelAfter`, if given) and checks it against the
    /// model: its live children, open scopes and singletons released in order, every owed hook run,
    /// the problems reported, and a later call reporting the same.
    @discardableResult
    func shutdownChecked(_ model: GraphModel, cancelAfter delay: ModelDelay? = nil) async throws -> String {
        guard let graph = model.graph else { throw ModelViolation("internal: \(model.name) is not held") }
        if model.isShutDown {
            let problems = await shutdownProblems(of: graph)
            if let previous = model.shutdownProblems, previous != summary(problems) {
                throw ModelViolation(
                    "shutdown again: a later \(model.name).shutdown() reported \(summary(problems)); the first reported \(previous)"
                )
            }
            return "again: \(summary(problems))"
        }
        let family = model.shutdownFamily
        let blocks = shutdownBlocks(of: model)
        let (required, optional) = owedByShutdown(of: family)
        let firstStep = journal.step
        let shuttingDown = Task { await shutdownProblems(of: graph) }
        if let delay {
            await delay.wait()
            shuttingDown.cancel()
        }
        let problems = await shuttingDown.value
        markShutDown(family)
        model.shutdownProblems = summary(problems)
        if let mismatch = mismatch(problems, required: removalProblems(required), optional: removalProblems(optional)) {
            throw ModelViolation("shutdown: \(model.name).shutdown() \(mismatch)")
        }
        try checkRemoved(required + optional, by: "shutdown of \(model.name)")
        try checkOrder(blocks, since: firstStep, of: model)
        if delay != nil {
            let again = await shutdownProblems(of: graph)
            if summary(again) != summary(problems) {
                throw ModelViolation(
                    "shutdown again: after a cancelled \(model.name).shutdown() reporting \(summary(problems)), a later call reported \(summary(again))"
                )
            }
        }
        return problems.isEmpty ? "ok" : summary(problems)
    }

    func dropGraph(_ id: Int) async throws -> String {
        let model = try graphModel(id)
        if !model.isShutDown {
            model.owedWhenDropped = owed(by: .graph(id)).map(\.serial)
            journal.abandon(model.owedWhenDropped)
        }
        model.graph = nil
        try await checkReleasedGraphs()
        return model.isAlive ? "kept alive by a child" : ""
    }

    /// Runs resolves, a close and a shutdown on one scope at once, and checks each outcome is one the
    /// model allows, and that afterwards everything they released was released once and completely.
    func concurrently(
        scope id: Int,
        resolves: [(ModelKey, ModelDelay)],
        close: StatefulOperation.ConcurrentClose?,
        shutdown: StatefulOperation.ConcurrentShutdown?
    ) async throws -> String {
        let model = try scopeModel(id)
        guard let scope = model.scope else { throw ModelViolation("internal: S\(id) is not held") }
        let target = try shutdown.map { try graphModel($0.graph) }
        let graph = target?.graph
        let family = target?.shutdownFamily ?? []
        let expected = resolves.map { expectedFailure(resolving: $0.0, in: model, existing: model.values) }
        var affected: Set<ModelOwner> = close == nil ? [] : [.scope(id)]
        var optionalOwners: Set<ModelOwner> = []
        for member in family {
            affected.insert(.graph(member.id))
            for memberScope in member.scopes {
                if memberScope.state == .open { affected.insert(.scope(memberScope.id)) }
                if memberScope.state == .dropped { optionalOwners.insert(.scope(memberScope.id)) }
            }
        }
        let firstSerial = journal.nextSerial
        let firstStep = journal.step
        let tasks = resolves.map { (handle($0.0), $0.1) }
        let outcomes = await withTaskGroup(of: ConcurrentOutcome.self) { group in
            for (index, (handle, delay)) in tasks.enumerated() {
                group.addTask {
                    await delay.wait()
                    return await ModelContext.$owner.withValue(.scope(id)) {
                        do {
                            return .resolved(index, .success(try await handle.resolveInScope(scope)))
                        } catch {
                            return .resolved(index, .failure(error))
                        }
                    }
                }
            }
            if let close {
                group.addTask {
                    await close.delay.wait()
                    let closing = Task {
                        do throws(ServiceGraphError) {
                            try await scope.close()
                            return [ServiceGraphError.Problem]()
                        } catch {
                            return error.problems
                        }
                    }
                    if let cancelAfter = close.cancelAfter {
                        await cancelAfter.wait()
                        closing.cancel()
                    }
                    return .closed(await closing.value)
                }
            }
            if let shutdown, let graph {
                group.addTask {
                    await shutdown.delay.wait()
                    do throws(ServiceGraphError) {
                        try await graph.shutdown()
                        return .shutDown([])
                    } catch {
                        return .shutDown(error.problems)
                    }
                }
            }
            var outcomes: [ConcurrentOutcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        try syncScope(model, from: firstSerial)
        var lines: [String] = []
        var problems: [ServiceGraphError.Problem] = []
        var shutdownResult: [ServiceGraphError.Problem] = []
        for outcome in outcomes {
            switch outcome {
            case .resolved(let index, .success(let value)):
                let key = resolves[index].0
                if let failure = expected[index] {
                    throw ModelViolation(
                        "resolve: \(model.name).resolve(\(key)) returned \((value as? ModelService)?.label ?? "?") during a close, expected \(failure)"
                    )
                }
                let summary = try checkValue(
                    value,
                    of: key,
                    in: model.graph,
                    scope: model,
                    firstSerial: firstSerial,
                    sequential: false
                )
                lines.append("\(key): \(summary)")
            case .resolved(let index, .failure(let error)):
                let key = resolves[index].0
                let code = (error as? ServiceGraphError)?.problems.first?.code
                let allowed: ExpectedProblem
                if let failure = expected[index], failure.code == code {
                    allowed = failure
                } else {
                    // The close can stop the resolve anywhere along its dependencies.
                    let names = Set(([key] + model.graph.spec.transitiveDependencies(of: key)).map(name))
                    allowed = ExpectedProblem(code == .graphShutDown ? .graphShutDown : .scopeClosed, key, names: names)
                }
                lines.append(
                    "\(key): " + (try checkError(error, expected: allowed, doing: "\(model.name).resolve(\(key))"))
                )
            case .closed(let closeProblems):
                if closeProblems.count == 1 && closeProblems[0].code == .scopeClosed {
                    guard shutdown != nil else {
                        throw ModelViolation(
                            "close: \(model.name).close() reported scopeClosed, but nothing else closed it"
                        )
                    }
                    lines.append("close: already closed")
                } else {
                    problems += closeProblems
                    lines.append("close: \(closeProblems.isEmpty ? "ok" : summary(closeProblems))")
                }
            case .shutDown(let shutdownProblems):
                problems += shutdownProblems
                shutdownResult = shutdownProblems
                lines.append("shutdown: \(shutdownProblems.isEmpty ? "ok" : summary(shutdownProblems))")
            }
        }
        if close != nil { model.state = .closed }
        if let target {
            markShutDown(family)
            target.shutdownProblems = summary(shutdownResult)
        }
        let released = journal.records.filter { record in
            record.isStarted && (record.willRemoveStartedAt ?? Int.max) > firstStep
        }
        let required = released.filter { $0.owner.map(affected.contains) == true }
        let optional = released.filter { $0.owner.map(optionalOwners.contains) == true }
        let owedNow = journal.records.filter { record in
            record.isStarted && record.willRemove == .notRun && record.owner.map(affected.contains) == true
        }
        try checkRemoved(owedNow + required + optional, by: "close and shutdown at once")
        if close != nil || shutdown != nil,
            let mismatch = mismatch(problems, required: removalProblems(required), optional: removalProblems(optional))
        {
            throw ModelViolation("close and shutdown at once: together they \(mismatch)")
        }
        return lines.joined(separator: ", ")
    }
}
