/// "Did you mean" suggestions for a key that is not in the graph.
enum NameSuggestions {
    /// Up to three names closest to `name`: keys with the same value type first, then by edit distance.
    ///
    /// Each candidate is compared by its `name` and shown as `shown` (its name qualified with its
    /// module, when the graph needs that to tell it from the missing key).
    static func closest(
        to name: String,
        among candidates: some Sequence<(name: String, shown: String, sameValueType: Bool)>
    ) -> [String] {
        let target = Array(name.lowercased().utf8)
        let threshold = max(3, target.count / 2)
        let scored = candidates.compactMap { candidate -> (String, Int)? in
            let distance = editDistance(target, Array(candidate.name.lowercased().utf8))
            if candidate.sameValueType { return (candidate.shown, distance - 1000) }
            return distance <= threshold ? (candidate.shown, distance) : nil
        }
        return scored.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(3).map(\.0)
    }

    /// Up to three keys providing the same value type as a missing key, closest names first, never
    /// the key at `excluded` (the service that requires the missing key). Ranking by name is skipped
    /// for more than 16 candidates (then the first three registered are shown), so a graph of 100,000
    /// keys of one type does not make validation quadratic.
    static func sameValueType(
        _ name: String,
        among slots: [Int],
        excluding excluded: Int,
        named: (Int) -> String
    ) -> [String] {
        guard slots.count <= 16 else { return slots.lazy.filter { $0 != excluded }.prefix(3).map(named) }
        let target = Array(name.lowercased().utf8)
        return
            slots
            .filter { $0 != excluded }
            .map { slot in (named(slot), editDistance(target, Array(named(slot).lowercased().utf8))) }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
            .prefix(3)
            .map(\.0)
    }

    /// The message for a key that is not in a graph: its name and the closest keys that are.
    ///
    /// When the missing key reads like one of the graph's keys (`ConfigKey` from another module),
    /// both are named with their modules.
    ///
    /// - Parameters:
    ///   - name: The missing key's name.
    ///   - key: The missing key, when known: to qualify its name if needed.
    ///   - valueType: The missing key's value type: keys providing it come first.
    ///   - keys: The graph's keys, by slot.
    ///   - names: The names of `keys`.
    static func notFoundMessage(
        for name: String,
        key: (any ServiceKey.Type)?,
        valueType: ObjectIdentifier,
        among keys: [any ServiceKey.Type],
        named names: KeyNames
    ) -> String {
        var missingName = name
        let candidates = names.all
        var shown = candidates
        if let key, candidates.contains(name) {
            let qualified = KeyNames.names(of: keys + [key])
            missingName = qualified[keys.count]
            shown = Array(qualified.dropLast())
        }
        // Compared by the names they had before telling them apart: a key of the same name is close.
        let suggestions = closest(
            to: name,
            among: keys.indices.lazy.map { (candidates[$0], shown[$0], keys[$0].valueTypeID == valueType) }
        )
        var message = "\(missingName) is not in this graph"
        // A key made with arguments is in the graph as its function.
        if let key {
            if let factories = argumentFactoriesByProduct(among: keys)[ObjectIdentifier(key)] {
                return message
                    + "; it is made with arguments: resolve \(factories.joined(separator: " or ")), a function of them"
            }
        }
        if !suggestions.isEmpty {
            message += "; closest keys: \(suggestions.joined(separator: ", "))"
        }
        return message
    }

    /// Levenshtein distance, two rows.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
