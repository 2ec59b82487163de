/// Hooks a service adopts to be told when the graph has put it in place and when it is about to go.
///
/// The graph calls the hooks of the singletons it builds and of the scoped instances a scope creates;
/// transient instances are not owned by the graph and get no hooks. Both hooks have empty defaults.
///
/// - ``didAdd()`` runs once, after the service and everything it depends on are in place, and before
///   any service that depends on it is created.
/// - ``willRemove()`` runs once, before the service is released, after every service that depends on
///   it has been removed. It does not run for a service whose ``didAdd()`` threw: that service never
///   started.
public protocol LifecycleHooks: Sendable {
    /// Called once the service and all it depends on are in place.
    func didAdd() async throws
    /// Called once before the service is released, after everything that depends on it is gone.
    func willRemove() async throws
}

extension LifecycleHooks {
    public func didAdd() async throws {}
    public func willRemove() async throws {}
}
