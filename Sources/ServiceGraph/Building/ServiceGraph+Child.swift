extension ServiceGraph {
    /// A builder for a child graph of this one: it starts with every service of this graph, and the
    /// child adds its own providers, which may depend on them.
    ///
    /// The child is searched first: a key the child provides replaces the parent's for everything
    /// built in the child, while the parent is untouched (it cannot depend on the child). The child
    /// shares the parent's singletons (it does not run their hooks or release them), makes its own
    /// transients and scoped instances, and keeps the parent alive as long as it lives. A child of a
    /// child searches itself, then its parent, then the root.
    ///
    /// The child builder starts with this graph's settings, which it may change: ``Builder/eventHandler``,
    /// ``Builder/eventKinds``, ``Builder/reportsResolveEvents``, ``Builder/hookTimeout``,
    /// ``Builder/factoryTimeout`` and ``Builder/requiresShutdown``. The child's events are its own: a
    /// parent's singleton it shares is not reported created in it.
    ///
    /// The parent's ``shutdown()`` shuts its live children down first, newest first; a child builder
    /// of a graph that is shut down (or shutting down) fails to build with
    /// ``ServiceGraphError/Code/graphShutDown``.
    ///
    /// ```swift
    /// var tenant = app.makeChildBuilder()
    /// tenant.provide(ThemeKey.self) { Theme.dark }          // replaces the app's theme here only
    /// tenant.provide(BillingKey.self, dependsOn: DatabaseKey.self) { Billing(database: $0) }
    /// let tenantGraph = try await tenant.build()
    /// ```
    public func makeChildBuilder() -> Builder {
        var builder = Builder()
        builder.parent = self
        builder.hookTimeout = core.hookTimeout
        builder.factoryTimeout = core.factoryTimeout
        builder.requiresShutdown = requiresShutdown
        builder.eventHandler = core.events.handler
        builder.eventKinds = core.events.kinds
        builder.reportsResolveEvents = core.reportsResolveEvents
        var registrations = RegistrationList(
            (0..<core.count).lazy.map { Registration(inheritedFrom: self, at: $0) }
        )
        registrations.scopeKinds = core.scopeKinds
        registrations.modules = core.modules
        builder.registrations = registrations
        builder.inheritedContributions = core.placedContributions
        return builder
    }
}
