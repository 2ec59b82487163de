import ServiceGraph
import ServiceGraphTestSupport

extension StatefulRun {
    func makeScope(_ id: Int, in graphID: Int) throws -> String {
        let model = try graphModel(graphID)
        guard let graph = model.graph else { throw ModelViolation("internal: G\(graphID) is not held") }
        do {
            let scope = try graph.makeScope()
            if model.isShutDown {
                throw ModelViolation("resolve after shutdown: \(model.name) is shut down, yet makeScope() succeeded")
            }
            let scopeModel = ScopeModel(id: id, graph: model, scope: scope)
            scopes[id] = scopeModel
            model.scopes.append(scopeModel)
            return "ok"
        } catch let error as ServiceGraphError {
            guard model.isShutDown else {
                throw ModelViolation("scope: \(model.name).makeScope() threw \(summary(error.problems))")
            }
            guard error.codes == [.graphShutDown] else {
                throw ModelViolation("error: makeScope() on shut-down \(model.name) threw \(summary(error.problems))")
            }
            return "graphShutDown"
        }
    }

    /// What resolving `key` in `scope` must throw, if anything.
    func expectedFailure(resolving key: ModelKey, in scope: ScopeModel, existing: [ModelKey: Int]) -> ExpectedProblem? {
        let spec = scope.graph.spec
        if spec.entries[key] == nil { return ExpectedProblem(.keyNotFound, key) }
        if !scope.isOpen { return ExpectedProblem(.scopeClosed, key) }
        return spec.creationFailure(of: key, existing: existing)
    }

    func resolve(_ key: ModelKey, inScope id: Int) async throws -> String {
        let model = try scopeModel(id)
        guard let scope = model.scope else { throw ModelViolation("internal: S\(id) is not held") }
        let expected = expectedFailure(resolving: key, in: model, existing: model.values)
        let firstSerial = journal.nextSerial
        journal.setCurrentOwner(.scope(id))
        let handle = handle(key)
        let result = await ModelContext.$owner.withValue(.scope(id)) {
            do {
                return Result<GeneratedService, any Error>.success(try await handle.resolveInScope(scope))
            } catch {
                return .failure(error)
            }
        }
        journal.setCurrentOwner(nil)
        try syncScope(model, from: firstSerial)
        let what = "\(model.name).resolve(\(key))"
        switch (result, expected) {
        case (.success(let value), nil):
            return try checkValue(
                value,
                of: key,
                in: model.graph,
                scope: model,
                firstSerial: firstSerial,
                sequential: true
            )
        case (.success(let value), let expected?):
            let kind = expected.code == .scopeClosed ? "resolve after close" : "resolve"
            throw ModelViolation(
                "\(kind): \(what) returned \((value as? ModelService)?.label ?? "?"), expected \(expected)"
            )
        case (.failure(let error), nil):
            throw ModelViolation("resolve: \(what) threw \(describe(error)), expected a value")
        case (.failure(let error), let expected?):
            return try checkError(error, expected: expected, doing: what)
        }
    }

    func resolve(_ key: ModelKey, inGraph id: Int, synchronously: Bool) async throws -> String {
        let model = try graphModel(id)
        guard let graph = model.graph else { throw ModelViolation("internal: G\(id) is not held") }
        let spec = model.spec
        let expected: ExpectedProblem?
        if spec.entries[key] == nil {
            expected = ExpectedProblem(.keyNotFound, key)
        } else if model.isShutDown {
            expected = ExpectedProblem(.graphShutDown, key)
        } else if synchronously && !spec.resolvesNow(key) {
            expected = ExpectedProblem(spec.needsScope(key) ? .wrongLifetime : .requiresAwait, key)
        } else {
            expected = spec.graphResolveFailure(of: key)
        }
        let firstSerial = journal.nextSerial
        journal.setCurrentOwner(.graph(id))
        let handle = handle(key)
        let result: Result<GeneratedService, any Error>
        if synchronously {
            result = ModelContext.$owner.withValue(.graph(id)) { Result { try handle.resolveNow(graph) } }
        } else {
            result = await ModelContext.$owner.withValue(.graph(id)) {
                do {
                    return Result<GeneratedService, any Error>.success(try await handle.resolve(graph))
                } catch {
                    return .failure(error)
                }
            }
        }
        journal.setCurrentOwner(nil)
        for record in journal.records(from: firstSerial) where record.owner == .graph(id) {
            if record.isOwned {
                throw ModelViolation(
                    "resolve: \(model.name).resolve(\(key)) made \(record.name), which it must not own"
                )
            }
            try checkDependencies(of: record, in: model, scope: nil, firstSerial: firstSerial)
        }
        let what = "\(model.name).\(synchronously ? "resolveSynchronously" : "resolve")(\(key))"
        switch (result, expected) {
        case (.success(let value), nil):
            return try checkValue(value, of: key, in: model, scope: nil, firstSerial: firstSerial, sequential: true)
        case (.success(let value), let expected?):
            let kind = expected.code == .graphShutDown ? "resolve after shutdown" : "resolve"
            throw ModelViolation(
                "\(kind): \(what) returned \((value as? ModelService)?.label ?? "?"), expected \(expected)"
            )
        case (.failure(let error), nil):
            throw ModelViolation("resolve: \(what) threw \(describe(error)), expected a value")
        case (.failure(let error), let expected?):
            return try checkError(error, expected: expected, doing: what)
        }
    }

    func describe(_ error: any Error) -> String {
        (error as? ServiceGraphError).map { summary($0.problems) } ?? "\(error)"
    }

    /// Closes a scope (cancelling the closing task after `cancelAfter`, if given) and checks that its
    /// instances were all released, whatever the cancellation.
    func close(_ id: Int, cancelAfter delay: ModelDelay? = nil) async throws -> String {
        let model = try scopeModel(id)
        guard let scope = model.scope else { throw ModelViolation("internal: S\(id) is not held") }
        let wasOpen = model.isOpen
        let owed = owed(by: .scope(id))
        let closing = Task {
            do throws(ServiceGraphError) {
                try await scope.close()
                return [ServiceGraphError.Problem]()
            } catch {
                return error.problems
            }
        }
        if let delay {
            await delay.wait()
            closing.cancel()
        }
        let problems = await closing.value
        model.state = .closed
        guard wasOpen else {
            if problems.first?.code != .scopeClosed || problems.count != 1 {
                throw ModelViolation(
                    "error: closing the closed \(model.name) reported \(summary(problems)), expected scopeClosed"
                )
            }
            return "scopeClosed"
        }
        if let mismatch = mismatch(problems, required: removalProblems(owed)) {
            throw ModelViolation("close: \(model.name).close() \(mismatch)")
        }
        try checkRemoved(owed, by: "close of \(model.name)")
        if delay != nil {
            var again: [ServiceGraphError.Code] = []
            do throws(ServiceGraphError) {
                try await scope.close()
            } catch {
                again = error.codes
            }
            if again != [.scopeClosed] {
                throw ModelViolation("close: closing \(model.name) again did not throw scopeClosed")
            }
        }
        return problems.isEmpty ? "ok" : summary(problems)
    }

    func dropScope(_ id: Int, waitForRelease: Bool) async throws -> String {
        let model = try scopeModel(id)
        let wasOpen = model.isOpen
        let owed = wasOpen ? owed(by: .scope(id)) : []
        let instances = journal.records.filter { $0.owner == .scope(id) && $0.isOwned && $0.isAlive }.map(\.serial)
        let droppedEvents = journal.events(of: model.graph.id, kind: .scopeDropped).count
        model.scope = nil
        guard wasOpen else {
            if waitForRelease, !(await waitUntil { !model.weakScope.isAlive }) {
                throw ModelViolation("leak: the closed \(model.name) is still alive after the test dropped it")
            }
            return "was closed"
        }
        guard waitForRelease else {
            model.state = .dropped
            return ""
        }
        let released = await waitUntil {
            !model.weakScope.isAlive
                && owed.allSatisfy { journal.record($0.serial)?.hasFinishedWillRemove == true }
                && instances.allSatisfy { journal.record($0)?.isAlive == false }
        }
        if !released {
            var reasons: [String] = []
            if model.weakScope.isAlive { reasons.append("the scope is still alive") }
            let notRemoved = owed.compactMap { journal.record($0.serial) }.filter { !$0.hasFinishedWillRemove }
            if !notRemoved.isEmpty { reasons.append("willRemove did not run on \(notRemoved.map(\.name))") }
            let alive = instances.compactMap { journal.record($0) }.filter(\.isAlive)
            if !alive.isEmpty { reasons.append("\(alive.map(\.name)) still alive") }
            throw ModelViolation(
                "dropped scope: \(model.name) was dropped without close() and not released: \(reasons.joined(separator: "; "))"
            )
        }
        if !owed.isEmpty && journal.events(of: model.graph.id, kind: .scopeDropped).count != droppedEvents + 1 {
            throw ModelViolation(
                "dropped scope: \(model.name) was dropped owing willRemove to \(owed.map(\.name)), but no scopeDropped event was sent"
            )
        }
        model.state = .closed
        return "released"
    }
}
