/// A created instance whose ``LifecycleHooks/didAdd()`` succeeded: it must get ``LifecycleHooks/willRemove()``.
struct StartedService: Sendable {
    let slot: Int
    let hooks: any LifecycleHooks
}

/// Runs lifecycle hooks and turns their failures into problems that name the service.
enum Lifecycle {
    /// Calls `didAdd` on a freshly created instance.
    static func didAdd(_ hooks: any LifecycleHooks, of slot: Int, in core: GraphCore) async throws(ServiceGraphError) {
        do {
            try await hooks.didAdd()
        } catch {
            let name = core.name(slot)
            throw ServiceGraphError(
                .init(
                    .didAddFailed,
                    key: name,
                    path: [name],
                    site: core.site(slot),
                    message: "didAdd of \(name) threw: \(error)",
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
                let name = core.name(service.slot)
                problems.append(
                    .init(
                        .willRemoveFailed,
                        key: name,
                        path: [name],
                        site: core.site(service.slot),
                        message: "willRemove of \(name) threw: \(error)",
                        underlyingError: error
                    )
                )
            }
        }
        return problems
    }
}
