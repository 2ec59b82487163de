/// Renders a ``GraphDescription`` as a Graphviz digraph.
struct DotDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    func render() -> String {
        var lines = [
            "digraph ServiceGraph {",
            "  rankdir=TB;",
            "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];",
            "  edge [color=\"#555555\"];",
        ]
        for service in graph.services {
            var label = [service.name, service.valueType, lifetimeLine(service), service.site.description]
            if !service.problemCodes.isEmpty { label.append(service.problemCodes.joined(separator: ", ")) }
            let attributes = [
                "label=\(quoted(label.joined(separator: "\n")))",
                "fillcolor=\(quoted(fill(service)))",
                service.mark == nil ? "" : "color=\(quoted(service.mark == .rootCause ? "#c92a2a" : "#e8590c"))",
                service.mark == .rootCause ? "penwidth=2" : "",
                service.isOverride ? "peripheries=2" : "",
            ].filter { !$0.isEmpty }
            lines.append("  \(quoted(service.name)) [\(attributes.joined(separator: ", "))];")
        }
        for name in graph.missingKeys {
            let label = quoted("\(name)\nmissing provider")
            lines.append(
                "  \(quoted(name)) [label=\(label), style=\"dashed,filled\", fillcolor=\"#ffe3e3\", color=\"#c92a2a\"];"
            )
        }
        for service in graph.services {
            for dependency in service.dependencies {
                let style = dependency.slot == nil ? " [style=dashed, color=\"#c92a2a\"]" : ""
                lines.append("  \(quoted(service.name)) -> \(quoted(dependency.name))\(style);")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    private func lifetimeLine(_ service: GraphDescription.Service) -> String {
        var parts = [service.lifetime.description]
        if let index = service.initializationIndex { parts.append("#\(index + 1)") }
        if let factory = service.factoryDuration { parts.append(factory.milliseconds) }
        if service.isOverride { parts.append("override") }
        return parts.joined(separator: " · ")
    }

    private func fill(_ service: GraphDescription.Service) -> String {
        switch service.mark {
        case .rootCause: "#ffc9c9"
        case .affected: "#ffe8cc"
        case nil:
            switch service.lifetime {
            case .singleton: "#e7f5ff"
            case .scoped: "#ebfbee"
            case .transient: "#f8f9fa"
            }
        }
    }

    /// A DOT string literal: quotes and backslashes escaped, line breaks as `\n`.
    private func quoted(_ text: String) -> String {
        var result = "\""
        for character in text {
            switch character {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result + "\""
    }
}
