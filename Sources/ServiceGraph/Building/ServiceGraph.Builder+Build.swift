extension ServiceGraph.Builder {
    /// Checks the whole graph without running any factory.
    ///
    /// Reports every problem at once: missing providers (with who needs them and a "did you mean"),
    /// cycles (with the full path), duplicate providers, captive dependencies and overrides of keys
    /// that were never provided. Each problem names the file and line of the offending provider.
    ///
    /// - Throws: A ``ServiceGraphError`` listing every problem found.
    /// - Complexity: O(services + edges).
    public func validate() throws(ServiceGraphError) {
        _ = try validatedPlan()
    }

    /// Validates the graph, then creates every singleton once, after all of its dependencies.
    ///
    /// Independent singletons are created concurrently, so the build takes about as long as the
    /// slowest chain of dependencies. Each singleton adopting ``LifecycleHooks`` gets ``LifecycleHooks/didAdd()``
    /// before anything that depends on it is created. If a factory or a `didAdd` throws, every service
    /// already started is released in reverse order and nothing is left alive.
    ///
    /// Singletons with synchronous factories are made depth-first, in the order they were declared:
    /// each one right after what it depends on (so a graph declared dependencies first is made in the
    /// order it was declared), until the first asynchronous factory or `didAdd` to run; from there on,
    /// each service is made as soon as its dependencies are ready. ``ServiceGraph/initializationOrder``
    /// gives the order a build took.
    ///
    /// The build runs on the caller's executor (`nonisolated(nonsending)`), with no hop to another
    /// executor and back: synchronous factories run there, in dependency order; asynchronous factories
    /// and `didAdd` hooks run in tasks of their own. To keep a large build off an actor (the main actor of
    /// an app), call it from a task of its own.
    ///
    /// - Returns: The built graph.
    /// - Throws: A ``ServiceGraphError``: the validation problems, or the failing service with its path.
    public nonisolated(nonsending) func build() async throws(ServiceGraphError) -> ServiceGraph {
        let plan = try validatedPlan()
        // A child graph is registered with its parent before anything runs, so the parent's shutdown
        // waits for the build, and a parent that is shut down builds no child.
        let childID = try parent?.childBuildStarted() ?? -1
        let core = _GraphCore(
            plan: plan,
            hookTimeout: hookTimeout,
            factoryTimeout: factoryTimeout,
            parentClaims: parent?.core.hookClaims,
            events: EventSink(handler: eventHandler, kinds: eventKinds),
            reportsResolveEvents: reportsResolveEvents
        )
        var build = SingletonBuild(plan: plan, core: core)
        let outcome = await build.run()
        switch outcome {
        case .built(let log):
            let graph = ServiceGraph(
                core: core,
                log: log,
                parent: parent,
                childID: childID,
                requiresShutdown: requiresShutdown
            )
            if let parent, !parent.childBuilt(graph) {
                // The parent began shutting down during the build: the child it would have shut down
                // first shuts itself down.
                let problems: [ServiceGraphError.Problem]
                do {
                    try await graph.shutdown()
                    problems = []
                } catch {
                    problems = error.problems
                }
                throw ServiceGraphError([parent.core.shutDownProblem("a child graph")] + problems)
            }
            return graph
        case .failed(let error):
            parent?.childFinished(childID)
            let problems = error.problems
            throw ServiceGraphError(
                problems,
                snapshot: GraphSnapshot(failedBuild: core, log: build.log, problems: problems)
            )
        }
    }

    /// The plan of this builder's graph and what validation found in it, made once per revision.
    var checkedPlan: CheckedPlan {
        validatedPlans.checkedPlan(
            for: revision,
            of: registrations,
            contributions: contributions,
            inheritedContributions: inheritedContributions,
            decorations: decorations
        )
    }

    /// The plan of this builder's graph, or every problem it has.
    func validatedPlan() throws(ServiceGraphError) -> GraphPlan {
        let checked = checkedPlan
        let (plan, problems) = (checked.plan, checked.findings.problems)
        guard problems.isEmpty else {
            throw ServiceGraphError(
                problems,
                snapshot: GraphSnapshot { GraphDescription(plan: plan).marked(with: problems) }
            )
        }
        return plan
    }
}
