/// Renders a ``GraphDescription`` as a Mermaid flowchart.
struct MermaidDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    /// Node ids are slots (`s0`) and positions of missing keys (`m0`), not names.
    ///
    /// - Complexity: O(services + edges).
    func render() -> String {
        let text = DumpText(capacity: 150 * graph.services.count + 24 * graph.edgeCount + 4096)
        text.write("flowchart TD\n")
        for (slot, service) in graph.services.enumerated() {
            text.write("    s")
            text.write(number: slot)
            // A seed comes in from outside the graph: drawn as a parallelogram.
            text.write(service.isSeed ? "[/\"" : "[\"")
            text.write(service.name, escaping: Self.escapes)
            text.write("<br/>")
            text.write(service.valueType, escaping: Self.escapes)
            text.write("<br/>")
            text.write(string: service.lifetimeLabel)
            if let index = service.initializationIndex {
                text.write(" #")
                text.write(number: index + 1)
            }
            if let factory = service.factoryDuration {
                text.write(" ")
                text.write(string: factory.milliseconds)
            }
            if service.isOverride { text.write(" override") }
            if !service.problemCodes.isEmpty {
                text.write("<br/>")
                text.write(service.problemCodes.joined(separator: ", "), escaping: Self.escapes)
            }
            text.write(service.isSeed ? "\"/]\n" : "\"]\n")
        }
        // Each module's services in a subgraph of their own.
        for (index, module) in graph.modules.enumerated() {
            text.write("    subgraph module")
            text.write(number: index)
            text.write("[\"module ")
            text.write(module.name, escaping: Self.escapes)
            text.write("\"]\n")
            for slot in module.slots {
                text.write("        s")
                text.write(number: slot)
                text.write("\n")
            }
            text.write("    end\n")
        }
        for (position, name) in graph.missingKeys.enumerated() {
            text.write("    m")
            text.write(number: position)
            text.write("[\"")
            text.write(name, escaping: Self.escapes)
            text.write("<br/>missing provider\"]\n")
        }
        var absentNodes = 0
        for (slot, names) in graph.absentOptionals.sorted(by: { $0.key < $1.key }) {
            for name in names {
                text.write("    a")
                text.write(number: absentNodes)
                text.write("[\"")
                text.write(name, escaping: Self.escapes)
                text.write("<br/>not provided (optional)\"]\n    ")
                text.write(node: .service(slot))
                text.write(" -. optional .-> a")
                text.write(number: absentNodes)
                text.write("\n")
                absentNodes += 1
            }
        }
        graph.forEachEdgeWithKind { slot, dependency, kind in
            text.write("    ")
            text.write(node: .service(slot))
            if !dependency.isService {
                text.write(" -.-> ")
            } else if kind != .direct {
                text.write(" -. ")
                text.write(string: kind.name)
                text.write(" .-> ")
            } else {
                text.write(" --> ")
            }
            text.write(node: dependency)
            text.write("\n")
        }
        text.write(
            """
                classDef singleton fill:#e7f5ff,stroke:#1c7ed6
                classDef scoped fill:#ebfbee,stroke:#37b24d
                classDef transient fill:#f8f9fa,stroke:#868e96
                classDef seed fill:#fff9db,stroke:#f08c00
                classDef absent fill:#ffffff,stroke:#868e96,stroke-dasharray:4
                classDef rootCause fill:#ffc9c9,stroke:#c92a2a,stroke-width:2px
                classDef affected fill:#ffe8cc,stroke:#e8590c
                classDef rebuilt fill:#d0ebff,stroke:#1971c2,stroke-width:2px
                classDef added fill:#d3f9d8,stroke:#2f9e44,stroke-width:2px

            """
        )
        for (slot, service) in graph.services.enumerated() {
            text.write("    class s")
            text.write(number: slot)
            text.write(" ")
            let mark = service.mark == .shared ? nil : service.mark
            text.write(string: mark?.rawValue ?? (service.isSeed ? "seed" : service.lifetime.description))
            text.write("\n")
        }
        for position in graph.missingKeys.indices {
            text.write("    class m")
            text.write(number: position)
            text.write(" rootCause\n")
        }
        for position in 0..<absentNodes {
            text.write("    class a")
            text.write(number: position)
            text.write(" absent\n")
        }
        return text.string
    }

    /// Inside a Mermaid label: quotes and angle brackets as entity codes.
    private static let escapes = Escapes { byte in
        switch byte {
        case UInt8(ascii: "\""): "#quot;"
        case UInt8(ascii: "<"): "#lt;"
        case UInt8(ascii: ">"): "#gt;"
        case UInt8(ascii: "\n"): "<br/>"
        default: nil
        }
    }
}
