/// Human-readable type names for errors and dumps.
enum TypeName {
    /// The type's name without its module prefix (`Outer.Inner`, `any AppLogger`).
    static func display(_ type: Any.Type) -> String {
        let reflected = withoutPrivateContexts(String(reflecting: type))
        guard let module = moduleName(of: type) else { return reflected }
        return reflected.replacing(module + ".", with: "")
    }

    /// Removes the `(unknown context at $10f5c3a20).` segments the runtime prints for private types.
    private static func withoutPrivateContexts(_ name: String) -> String {
        var result = name
        while let start = result.firstRange(of: "(unknown context at ") {
            guard let end = result[start.upperBound...].firstRange(of: ").") else { break }
            result.removeSubrange(start.lowerBound..<end.upperBound)
        }
        return result
    }

    /// `type`'s name with the module of `reference` removed, so value types read like their keys.
    static func display(_ type: Any.Type, moduleOf reference: Any.Type) -> String {
        var name = withoutPrivateContexts(String(reflecting: type))
        for module in Set([moduleName(of: type), moduleName(of: reference)].compactMap { $0 }) {
            name = name.replacing(module + ".", with: "")
        }
        return name
    }

    private static func moduleName(of type: Any.Type) -> String? {
        let reflected = String(reflecting: type)
        guard let dot = reflected.firstIndex(of: "."),
            !reflected[..<dot].contains(where: { $0 == " " || $0 == "(" || $0 == "<" || $0 == "[" })
        else { return nil }
        let module = String(reflected[..<dot])
        return module == "Swift" ? "Swift" : module
    }
}
