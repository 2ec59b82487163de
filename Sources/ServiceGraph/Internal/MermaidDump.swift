/// Renders a ``GraphDescription`` as a Mermaid flowchart.
struct MermaidDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    func render() -> String {
        var lines = ["flowchart TD"]
        for (slot, service) in graph.services.enumerated() {
            var label = [service.name, service.valueType, service.lifetime.description]
            if let index = service.initializationIndex { label[2] += " #\(index + 1)" }
            if let factory = service.factoryDuration { label[2] += " \(factory.milliseconds)" }
            if service.isOverride { label[2] += " override" }
            if !service.problemCodes.isEmpty { label.append(service.problemCodes.joined(separator: ", ")) }
            lines.append("    s\(slot)[\"\(label.map(escaped).joined(separator: "<br/>"))\"]")
        }
        for (index, name) in graph.missingKeys.enumerated() {
            lines.append("    m\(index)[\"\(escaped(name))<br/>missing provider\"]")
        }
        for (slot, service) in graph.services.enumerated() {
            for dependency in service.dependencies {
                if let target = dependency.slot {
                    lines.append("    s\(slot) --> s\(target)")
                } else if let missing = graph.missingKeys.firstIndex(of: dependency.name) {
                    lines.append("    s\(slot) -.-> m\(missing)")
                }
            }
        }
        lines += [
            "    classDef singleton fill:#e7f5ff,stroke:#1c7ed6",
            "    classDef scoped fill:#ebfbee,stroke:#37b24d",
            "    classDef transient fill:#f8f9fa,stroke:#868e96",
            "    classDef rootCause fill:#ffc9c9,stroke:#c92a2a,stroke-width:2px",
            "    classDef affected fill:#ffe8cc,stroke:#e8590c",
        ]
        for (slot, service) in graph.services.enumerated() {
            let style = service.mark?.rawValue ?? service.lifetime.description
            lines.append("    class s\(slot) \(style)")
        }
        for index in graph.missingKeys.indices {
            lines.append("    class m\(index) rootCause")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Mermaid label text: quotes and angle brackets as entity codes.
    private func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\"": result += "#quot;"
            case "<": result += "#lt;"
            case ">": result += "#gt;"
            default: result.append(character)
            }
        }
        return result
    }
}
