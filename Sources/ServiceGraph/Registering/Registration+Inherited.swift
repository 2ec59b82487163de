extension Registration {
    /// The registration a child graph takes over from `parent` for the service at `slot`: the
    /// parent's own instance for a singleton (borrowed: the parent runs its hooks; one the parent
    /// creates on first use is asked of the parent on first use in the child), the same factory,
    /// run in the child, for a transient or scoped service.
    ///
    /// Made from what the built graph keeps per service (key, lifetime, site, dependency slots,
    /// factory), not from a plan kept for the purpose: keeping every graph's plan would cost each
    /// graph its registrations and edge arrays again, and would keep the singletons' factories alive
    /// after the build.
    init(inheritedFrom parent: ServiceGraph, at slot: Int) {
        let core = parent.core
        let service = core.records[slot]
        func inherit<Key: ServiceKey>(_ key: Key.Type) -> Registration {
            let lifetime = core.lifetime(of: slot)
            let isSingleton = lifetime == .singleton
            let isCreatedOnFirstUse = isSingleton && core.isDeferred(slot)
            var registration = Registration(
                key: key,
                lifetime: lifetime,
                dependencies: isSingleton
                    ? _DependencyKeys()
                    : core.declaredDependencies[slot]
                        ?? _DependencyKeys(core.dependencies(of: slot).map { (core.key(at: $0), .direct) }),
                site: SiteLiteral(fileID: core.files[Int(service.fileIndex)], line: UInt(service.line)),
                factory: isCreatedOnFirstUse
                    ? _AnyFactory(borrowingAsynchronously: { try await parent.resolve(key) })
                    : isSingleton ? _AnyFactory(borrowing: { parent[key] }) : core.serviceFactory(at: slot),
                isOverride: false
            )
            registration.isInherited = true
            registration.borrowsParentInstance = isSingleton
            registration.isSeed = core.isSeed(slot)
            registration.isPairedForm = service.isPairedForm
            if service.isPairedForm { registration.argumentFactoryForm = _ArgumentFactoryForm(of: key) }
            registration.isCreatedOnFirstUse = isCreatedOnFirstUse
            registration.scopeKind = core.scopeKindIndex(of: slot)
            registration.module = core.slotModules?[slot] ?? 0
            return registration
        }
        self = inherit(core.key(at: slot))
    }
}
