/// A created instance whose ``LifecycleHooks/didAdd()`` succeeded: it must get ``LifecycleHooks/willRemove()``.
struct StartedService: Sendable {
    let slot: Int
    let hooks: any LifecycleHooks
}

/// Runs lifecycle hooks and turns their failures into problems that name the service.
enum Lifecycle {
    /// Calls `didAdd` on a freshly created instance.
    static func didAdd(_ hooks: any LifecycleHooks, of node: Node) async throws(ServiceGraphError) {
        do {
            try await hooks.didAdd()
        } catch {
            throw ServiceGraphError(
                .init(
                    .didAddFailed,
                    key: node.name,
                    path: [node.name],
                    site: node.provider.site.site,
                    message: "didAdd of \(node.name) threw: \(error)",
                    underlyingError: error
                )
            )
        }
    }

    /// Calls `willRemove` on each started service, most recently started first, and keeps going when
    /// one throws. Each hook runs exactly once.
    ///
    /// - Returns: One problem per hook that threw, in the order they ran.
    static func release(_ started: [StartedService], of core: GraphCore) async -> [ServiceGraphError.Problem] {
        var problems: [ServiceGraphError.Problem] = []
        for service in started.reversed() {
            do {
                try await service.hooks.willRemove()
            } catch {
                let node = core.nodes[service.slot]
                problems.append(
                    .init(
                        .willRemoveFailed,
                        key: node.name,
                        path: [node.name],
                        site: node.provider.site.site,
                        message: "willRemove of \(node.name) threw: \(error)",
                        underlyingError: error
                    )
                )
            }
        }
        return problems
    }
}
