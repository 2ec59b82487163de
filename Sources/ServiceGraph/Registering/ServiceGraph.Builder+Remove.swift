extension ServiceGraph.Builder {
    /// Removes `key` from the graph this builder makes: every provider and override of it registered
    /// so far, every contribution to it (when it is a collection key) and every decoration of it. An
    /// argument factory's key takes its other form (synchronous or asynchronous) with it.
    ///
    /// A later `provide` of `key` adds it again. A service that still depends on `key` is reported by
    /// ``validate()`` as a missing provider, naming the service and where it was registered; removing a
    /// key the builder never had does nothing. (In a ``LiveGraph`` change set, removing a key that
    /// neither the current generation nor the change set has is reported as
    /// ``ServiceGraphError/Code/keyNotFound``: such a removal is most likely of the wrong key.)
    ///
    /// ```swift
    /// var test = ServiceGraph.Builder.application   // a copy: the app's wiring, not its instances
    /// test.remove(AnalyticsKey.self)                // and nothing that needs it may stay
    /// ```
    ///
    /// - Parameter key: The key to take out.
    public mutating func remove<Key: ServiceKey>(_ key: Key.Type) {
        var keys: [any ServiceKey.Type] = [key]
        if let other = (key as? any ArgumentFactoryKey.Type)?.otherForm { keys.append(other) }
        let removed = Set(keys.map { ObjectIdentifier($0) })
        registrations.removeAll { removed.contains($0.keyID) }
        if contributions.contains(where: { removed.contains(ObjectIdentifier($0.collection.key)) }) {
            contributions.removeAll { removed.contains(ObjectIdentifier($0.collection.key)) }
        }
        if inheritedContributions.contains(where: { removed.contains(ObjectIdentifier($0.collection.key)) }) {
            inheritedContributions.removeAll { removed.contains(ObjectIdentifier($0.collection.key)) }
        }
        if decorations.contains(where: { removed.contains($0.keyID) }) {
            decorations.removeAll { removed.contains($0.keyID) }
        }
        for key in keys { removedKeys[ObjectIdentifier(key)] = key }
    }
}
