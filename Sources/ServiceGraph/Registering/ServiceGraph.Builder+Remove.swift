extension ServiceGraph.Builder {
    /// Removes `key` from the graph this builder makes: every provider and override of it registered
    /// so far, every contribution to it (when it is a collection key) and every decoration of it. An
    /// argument factory's key takes its other form (synchronous or asynchronous) with it.
    ///
    /// A later `provide` of `key` adds it again. A service that still depends on `key` is reported by
    /// ``validate()`` as a missing provider, naming the service and where it was registered; removing a
    /// key the builder never had does nothing.
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

extension ServiceGraph.Builder {
    /// Numbers each `provide`, `override`, `contribute` and `decorate` call that has no number yet, from
    /// where the last numbering stopped: a ``LiveGraph`` numbers its first builder, then each change
    /// set, so that the next generation's providers tell which of them the current generation had
    /// (same number) and which the change set made (a new one), whatever key a plan files them under.
    mutating func assignSerials() {
        var next = nextSerial
        registrations.assignSerials(from: &next)
        for index in contributions.indices where contributions[index].serial < 0 {
            contributions[index].serial = next
            next += 1
        }
        for index in decorations.indices where decorations[index].serial < 0 {
            decorations[index].serial = next
            next += 1
        }
        nextSerial = next
    }
}
