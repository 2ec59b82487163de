extension ServiceGraph.Builder {
    /// Adds `module`'s providers, contributions and decorators, once: a module already included (the
    /// same type and name) is not included again. See ``GraphModule``.
    public mutating func include(_ module: some GraphModule) {
        let info = ModuleInfo(
            type: ObjectIdentifier(type(of: module)),
            name: module.name,
            privateKeys: Set(module.privateKeys.map { ObjectIdentifier($0) })
        )
        guard !registrations.modules.contains(where: { $0.isSame(as: info) }) else { return }
        precondition(registrations.modules.count < Int(UInt16.max), "too many modules")
        registrations.modules.append(info)
        let outer = currentModule
        currentModule = UInt16(registrations.modules.count - 1)
        defer { currentModule = outer }
        module.register(in: &self)
    }
}
