/// Renders a ``GraphDescription`` as JSON, by hand: the library does not depend on Foundation.
///
/// The shape (version 1) is documented in the Diagnostics article and checked by a test that decodes
/// it with `JSONDecoder`.
struct JSONDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    func render() -> String {
        var root: [(String, String)] = [
            ("format", string("servicegraph")),
            ("version", "1"),
            ("built", graph.isBuilt ? "true" : "false"),
        ]
        if let total = graph.totalDuration { root.append(("totalMilliseconds", milliseconds(total))) }
        root.append(("services", array(graph.services.map(service), indent: 2)))
        root.append(("missingKeys", array(graph.missingKeys.map(string), indent: 2)))
        root.append(
            ("initializationOrder", array(graph.initializationOrder.map { string(graph.services[$0].name) }, indent: 2))
        )
        root.append(("problems", array(graph.problems.map(problem), indent: 2)))
        return object(root, indent: 0) + "\n"
    }

    private func service(_ service: GraphDescription.Service) -> String {
        object(
            [
                ("key", string(service.name)),
                ("valueType", string(service.valueType)),
                ("lifetime", string(service.lifetime.description)),
                ("site", site(service.site)),
                ("override", service.isOverride ? "true" : "false"),
                ("dependencies", inline(service.dependencies.filter { $0.slot != nil }.map { string($0.name) })),
                ("missingDependencies", inline(service.dependencies.filter { $0.slot == nil }.map { string($0.name) })),
                ("initializationIndex", service.initializationIndex.map(String.init) ?? "null"),
                ("factoryMilliseconds", service.factoryDuration.map(milliseconds) ?? "null"),
                ("didAddMilliseconds", service.didAddDuration.map(milliseconds) ?? "null"),
                ("mark", service.mark.map { string($0.rawValue) } ?? "null"),
                ("problems", inline(service.problemCodes.map(string))),
            ],
            indent: 4
        )
    }

    private func problem(_ problem: ServiceGraphError.Problem) -> String {
        object(
            [
                ("code", string(problem.code.description)),
                ("key", string(problem.key)),
                ("path", inline(problem.path.map(string))),
                ("site", problem.site.map(site) ?? "null"),
                ("message", string(problem.message)),
            ],
            indent: 4
        )
    }

    private func site(_ site: RegistrationSite) -> String {
        "{\"fileID\": \(string(site.fileID)), \"line\": \(site.line)}"
    }

    private func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let whole = microseconds / 1_000
        let fraction = String(microseconds % 1_000)
        return "\(whole).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }

    private func object(_ members: [(String, String)], indent: Int) -> String {
        let pad = String(repeating: " ", count: indent + 2)
        let body = members.map { "\(pad)\(string($0.0)): \($0.1)" }.joined(separator: ",\n")
        return "{\n\(body)\n\(String(repeating: " ", count: indent))}"
    }

    private func array(_ elements: [String], indent: Int) -> String {
        guard !elements.isEmpty else { return "[]" }
        let pad = String(repeating: " ", count: indent + 2)
        return "[\n" + elements.map { pad + $0 }.joined(separator: ",\n") + "\n" + String(repeating: " ", count: indent)
            + "]"
    }

    private func inline(_ elements: [String]) -> String {
        "[" + elements.joined(separator: ", ") + "]"
    }

    /// A JSON string literal with the escapes RFC 8259 requires.
    private func string(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
