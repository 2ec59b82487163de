extension ServiceGraph {
    /// The singletons the build created whose values are a `Value` (a protocol, typically, tested with
    /// a dynamic cast), each with its key's name, in the order they were created
    /// (``initializationOrder``, a topological order: each after everything it depends on).
    ///
    /// This is what a runner needs that starts an application's long-running services in dependency
    /// order and stops them in reverse, such as a `ServiceGroup` of swift-service-lifecycle:
    ///
    /// ```swift
    /// let services = graph.singletons(as: (any Service).self)
    /// ```
    ///
    /// A child graph lists its own singletons, not those it shares with its parent (the parent's list
    /// has them), even where the child's list of contributions holds the parent's elements. Each key is
    /// listed: an instance provided under two keys is listed twice. Singletons that only ``Lazy`` handles reach are created on first use, not by the build, and are
    /// not listed. The list is read from the built graph without running a factory or a hook; after
    /// ``shutdown()`` it still lists the instances, which have been through their `willRemove`.
    public func singletons<Value>(as type: Value.Type = Value.self) -> [(key: String, value: Value)] {
        var found: [(key: String, value: Value)] = []
        for slot in _core.creationOrder where !_core.records[slot].borrowsParentInstance {
            guard let instance = _core.createdSingleton(at: slot), let value = instance as? Value else { continue }
            found.append((key: _core.name(slot), value: value))
        }
        return found
    }
}

extension _GraphCore {
    /// The singleton at `slot` as `Any`, if the build created it: for code that looks at instances by
    /// their dynamic type (``ServiceGraph/singletons(as:)``), not for resolving.
    func createdSingleton(at slot: Int) -> Any? {
        guard let stored = buffers.singletonBox(at: slot)?.takeUnretainedValue() else { return nil }
        if let box = stored as? _ValueBox { return box.value }
        return stored
    }
}

extension _ValueBox {
    /// The value in this box as `Any` (generic code, for diagnostics and listing only); nil for an
    /// empty box.
    var value: Any? {
        guard let valueType = storage.header.valueType else { return nil }
        let address = valueAddress
        func load<Value>(_: Value.Type) -> Any { address.assumingMemoryBound(to: Value.self).pointee }
        return load(valueType)
    }
}
