/// "Did you mean" suggestions for a key that is not in the graph.
enum NameSuggestions {
    /// Up to three names closest to `name`: keys with the same value type first, then by edit distance.
    static func closest(to name: String, among candidates: [(name: String, sameValueType: Bool)]) -> [String] {
        let target = Array(name.lowercased().utf8)
        let threshold = max(3, target.count / 2)
        let scored = candidates.compactMap { candidate -> (String, Int)? in
            let distance = editDistance(target, Array(candidate.name.lowercased().utf8))
            if candidate.sameValueType { return (candidate.name, distance - 1000) }
            return distance <= threshold ? (candidate.name, distance) : nil
        }
        return scored.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(3).map(\.0)
    }

    /// Up to three keys providing the same value type as a missing key, closest names first. Ranking
    /// by name is skipped for more than 16 candidates (then the first three registered are shown), so a
    /// graph of 100,000 keys of one type does not make validation quadratic.
    static func sameValueType(_ name: String, among slots: [Int], named: (Int) -> String) -> [String] {
        guard slots.count <= 16 else { return slots.prefix(3).map(named) }
        let target = Array(name.lowercased().utf8)
        return
            slots
            .map { slot in (named(slot), editDistance(target, Array(named(slot).lowercased().utf8))) }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
            .prefix(3)
            .map(\.0)
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
