/// Renders a ``GraphDescription`` as a Graphviz digraph.
struct DotDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    /// Node ids are slots (`s0`) and positions of missing keys (`m0`), not names, so two keys that
    /// read alike stay two nodes; the label shows the name.
    ///
    /// - Complexity: O(services + edges).
    func render() -> String {
        let text = DumpText(capacity: 160 * graph.services.count + 24 * graph.edgeCount + 4096)
        text.write(
            """
            digraph ServiceGraph {
              rankdir=TB;
              node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];
              edge [color="#555555"];

            """
        )
        for (slot, service) in graph.services.enumerated() {
            text.write("  s")
            text.write(number: slot)
            text.write(" [label=\"")
            text.write(service.name, escaping: Self.escapes)
            text.write("\\n")
            text.write(service.valueType, escaping: Self.escapes)
            text.write("\\n")
            lifetimeLine(service, into: text)
            text.write("\\n")
            text.write(service.site.fileID, escaping: Self.escapes)
            text.write(":")
            text.write(number: service.site.line)
            if !service.problemCodes.isEmpty {
                text.write("\\n")
                text.write(service.problemCodes.joined(separator: ", "), escaping: Self.escapes)
            }
            text.write("\", fillcolor=\"")
            text.write(fill(service))
            text.write("\"")
            switch service.mark {
            case .rootCause: text.write(", color=\"#c92a2a\", penwidth=2")
            case .affected: text.write(", color=\"#e8590c\"")
            case .rebuilt: text.write(", color=\"#1971c2\", penwidth=2")
            case .added: text.write(", color=\"#2f9e44\", penwidth=2")
            case .shared, nil: break
            }
            if service.isOverride { text.write(", peripheries=2") }
            // A seed comes in from outside the graph: drawn as an entry, not as a box a factory fills.
            if service.isSeed { text.write(", shape=cds") }
            text.write("];\n")
        }
        // Each module's services in a cluster of their own.
        for (index, module) in graph.modules.enumerated() {
            text.write("  subgraph cluster_module")
            text.write(number: index)
            text.write(" {\n    label=\"module ")
            text.write(module.name, escaping: Self.escapes)
            text.write("\";\n    style=\"rounded,dashed\";\n    color=\"#868e96\";\n   ")
            for slot in module.slots {
                text.write(" s")
                text.write(number: slot)
                text.write(";")
            }
            text.write("\n  }\n")
        }
        for (position, name) in graph.missingKeys.enumerated() {
            text.write("  m")
            text.write(number: position)
            text.write(" [label=\"")
            text.write(name, escaping: Self.escapes)
            text.write("\\nmissing provider\", style=\"dashed,filled\", fillcolor=\"#ffe3e3\", color=\"#c92a2a\"];\n")
        }
        var absentNode = 0
        for (slot, names) in graph.absentOptionals.sorted(by: { $0.key < $1.key }) {
            for name in names {
                // One node per absent dependency: each says who did without it.
                text.write("  a")
                text.write(number: absentNode)
                text.write(" [label=\"")
                text.write(name, escaping: Self.escapes)
                text.write(
                    "\\nnot provided (optional)\", style=\"dashed\", fillcolor=\"#ffffff\", color=\"#868e96\"];\n  "
                )
                text.write(node: .service(slot))
                text.write(" -> a")
                text.write(number: absentNode)
                text.write(" [style=dotted, color=\"#868e96\", label=\"optional\"];\n")
                absentNode += 1
            }
        }
        graph.forEachEdgeWithKind { slot, dependency, kind in
            text.write("  ")
            text.write(node: .service(slot))
            text.write(" -> ")
            text.write(node: dependency)
            if !dependency.isService {
                text.write(" [style=dashed, color=\"#c92a2a\"];\n")
            } else if kind != .direct {
                text.write(" [style=dashed, label=\"")
                text.write(string: kind.name)
                text.write("\"];\n")
            } else {
                text.write(";\n")
            }
        }
        text.write("}\n")
        return text.string
    }

    /// The lifetime, initialization position, factory time and override mark, for the label.
    private func lifetimeLine(_ service: GraphDescription.Service, into text: DumpText) {
        text.write(string: service.lifetimeLabel)
        if let index = service.initializationIndex {
            text.write(" · #")
            text.write(number: index + 1)
        }
        if let factory = service.factoryDuration {
            text.write(" · ")
            text.write(string: factory.milliseconds)
        }
        if service.isOverride { text.write(" · override") }
    }

    private func fill(_ service: GraphDescription.Service) -> StaticString {
        switch service.mark {
        case .rootCause: "#ffc9c9"
        case .affected: "#ffe8cc"
        case .rebuilt: "#d0ebff"
        case .added: "#d3f9d8"
        case .shared, nil:
            switch service.lifetime {
            case .singleton: "#e7f5ff"
            case .scoped: service.isSeed ? "#fff9db" : "#ebfbee"
            case .transient: "#f8f9fa"
            }
        }
    }

    /// Inside a DOT string literal: quotes and backslashes escaped, line breaks as `\n`.
    private static let escapes = Escapes { byte in
        switch byte {
        case UInt8(ascii: "\""): "\\\""
        case UInt8(ascii: "\\"): "\\\\"
        case UInt8(ascii: "\n"): "\\n"
        default: nil
        }
    }
}
