/// Turns a builder's decorators (``Decoration``) into providers: the providers of a decorated key
/// provide its first stage instead (``DecoratedStage``, `Key (undecorated)`), each decorator provides
/// the next stage from the one before, and the last provides the key itself. From there on they are
/// ordinary providers: validated, built, resolved, dumped and released like any other.
enum Decorations {
    /// Rewrites `registrations` for `decorations`; returns the decorators of keys nothing provides.
    static func apply(
        _ decorations: [Decoration],
        to registrations: inout RegistrationList
    ) -> [ServiceGraphError.Problem] {
        var groupOf: [ObjectIdentifier: Int] = [:]
        var groups: [[Decoration]] = []
        for decoration in decorations {
            if let group = groupOf[decoration.keyID] {
                groups[group].append(decoration)
            } else {
                groupOf[decoration.keyID] = groups.count
                groups.append([decoration])
            }
        }
        // The providers (and overrides) of every decorated key, found in one pass.
        var providers = Array(repeating: [Int](), count: groups.count)
        for index in registrations.indices {
            if let group = groupOf[registrations[index].keyID] { providers[group].append(index) }
        }
        var problems: [ServiceGraphError.Problem] = []
        for (group, decorators) in groups.enumerated() {
            let key = decorators[0].key
            guard !providers[group].isEmpty else {
                problems.append(
                    .init(
                        .missingProvider,
                        key: key.serviceName,
                        site: decorators[0].site.site,
                        message: "\(key.serviceName) is decorated, but nothing provides it"
                            + argumentFactoryHint(for: key, in: registrations)
                    )
                )
                continue
            }
            // A seed's value is given to each scope under its own key: there is no value of a provider
            // to wrap, and the key must stay the seed's.
            if let seed = providers[group].first(where: { registrations[$0].isSeed }) {
                problems.append(
                    .init(
                        .invalidKey,
                        key: key.serviceName,
                        site: decorators[0].site.site,
                        message:
                            "\(key.serviceName) is a seed (at \(registrations[seed].site.site)), given to each scope as it is: it cannot be decorated; decorate a service made from it instead"
                    )
                )
                continue
            }
            // The lifetime and kind of scope the key's value has once overrides are applied: every stage
            // has them.
            // The provider the plan keeps (a child's own before one it inherited, the first of duplicates),
            // then the overrides that say otherwise.
            let indices = providers[group]
            let kept =
                indices.first { !registrations[$0].isOverride && !registrations[$0].isInherited }
                ?? indices.first { !registrations[$0].isOverride } ?? indices[0]
            // A module's private value is the module's: a decorator from outside would change what the
            // module's own services receive.
            let owner = registrations[kept].module
            if owner != 0, registrations.modules[Int(owner)].privateKeys.contains(ObjectIdentifier(key)) {
                let outsiders = decorators.filter { $0.module != owner }
                for decorator in outsiders {
                    let from =
                        decorator.module == 0
                        ? "outside any module" : "in module \(registrations.modules[Int(decorator.module)].name)"
                    problems.append(
                        .init(
                            .privateDependency,
                            key: key.serviceName,
                            site: decorator.site.site,
                            message:
                                "a decorator (\(from)) wraps \(key.serviceName), which is private to module \(registrations.modules[Int(owner)].name) (provided at \(registrations[kept].site.site))"
                        )
                    )
                }
                if !outsiders.isEmpty { continue }
            }
            var lifetime = registrations[kept].lifetime
            var scopeKind = registrations[kept].scopeKind
            for index in indices where registrations[index].isOverride {
                if !registrations[index].inheritsLifetime { lifetime = registrations[index].lifetime }
                if registrations[index].scopeKind != 0 { scopeKind = registrations[index].scopeKind }
            }
            // The first stage not already in the graph: a child graph inherits its parent's stages, and
            // its own decorators wrap what the parent's made.
            var base = 0
            if registrations.mayHaveInherited {
                var keys: Set<ObjectIdentifier> = []
                for index in registrations.indices where registrations[index].isInherited {
                    keys.insert(registrations[index].keyID)
                }
                while keys.contains(ObjectIdentifier(decorators[0].stage(base))) { base += 1 }
            }
            let undecorated = decorators[0].stage(base)
            for index in providers[group] { registrations[index] = registrations[index].with(key: undecorated) }
            for (position, decorator) in decorators.enumerated() {
                var dependencies = _DependencyKeys()
                dependencies.append(decorator.stage(base + position), kind: .direct)
                for position in decorator.dependencies.indices {
                    dependencies.append(
                        decorator.dependencies[position],
                        kind: decorator.dependencies.kind(at: position)
                    )
                }
                var registration = Registration(
                    key: position == decorators.count - 1 ? key : decorator.stage(base + position + 1),
                    lifetime: lifetime,
                    dependencies: dependencies,
                    site: decorator.site,
                    factory: decorator.factory,
                    isOverride: false
                )
                registration.scopeKind = scopeKind
                registration.module = decorator.module
                registration.serial = decorator.serial
                registrations.append(registration)
            }
        }
        return problems
    }

    /// " (it has arguments: ...)" when a factory with arguments makes `key`'s values, whose key is the
    /// one to decorate; nothing otherwise.
    private static func argumentFactoryHint(for key: any ServiceKey.Type, in registrations: RegistrationList) -> String
    {
        guard registrations.mayHaveArgumentFactories else { return "" }
        for index in registrations.indices where registrations[index].argumentFactoryForm != .none {
            guard let factory = registrations[index].key as? any ArgumentFactoryKey.Type,
                ObjectIdentifier(factory.product) == ObjectIdentifier(key)
            else { continue }
            return " (a factory with arguments makes its values: decorate \(factory.spelledName) instead)"
        }
        return ""
    }
}
