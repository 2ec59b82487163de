/// The names of one graph's keys in errors and dumps: made once, on first use, and qualified where
/// two keys of the graph would read alike.
///
/// A key's name is its ``ServiceKey/serviceName``. Where different keys share one, each of them that
/// uses the default name is qualified with its module (`FeatureModule.ConfigKey` and
/// `ProbeKit.ConfigKey`, not `ConfigKey` twice); where that is not enough either (two private types
/// of one name in one module), the second and later are numbered (`ServiceGraphTests.ConfigKey (2)`).
/// A name a key gives itself is kept as given.
///
/// Names are made only for errors and dumps, never on the resolve path: making one reflects on the
/// type, and qualifying them needs every name of the graph.
final class KeyNames: Sendable {
    private let keys: @Sendable () -> [any ServiceKey.Type]
    private let lookupFrom: Int
    /// Names given by the graph itself, by key, used as given: a contribution's, with its id.
    private let labels: [ObjectIdentifier: String]
    private let state = Locked<Table?>(nil)

    private struct Table {
        var names: [String]
        /// Index of each key from `lookupFrom` on, by identity.
        var positions: [ObjectIdentifier: Int]
    }

    /// Names for `keys`, which must be distinct; the keys from position `lookupFrom` on can also be
    /// looked up by identity with ``name(of:)``.
    init(
        lookupFrom: Int = .max,
        labels: [ObjectIdentifier: String] = [:],
        keys: @escaping @Sendable () -> [any ServiceKey.Type]
    ) {
        self.keys = keys
        self.lookupFrom = lookupFrom
        self.labels = labels
    }

    /// Every name, in the order of the keys.
    ///
    /// - Complexity: O(keys) on first use (one reflection per key), then O(1).
    var all: [String] { table.names }

    func name(_ index: Int) -> String { table.names[index] }

    /// The name of `key`, when it is one of the keys that can be looked up.
    func name(of key: ObjectIdentifier) -> String? {
        let table = table
        return table.positions[key].map { table.names[$0] }
    }

    private var table: Table {
        if let table = state.withLock({ $0 }) { return table }
        // Made outside the lock: making names runs the keys' `serviceName`, which is user code.
        let keys = keys()
        var positions: [ObjectIdentifier: Int] = [:]
        if lookupFrom < keys.count {
            for index in lookupFrom..<keys.count { positions[ObjectIdentifier(keys[index])] = index }
        }
        var names = Self.names(of: keys)
        if !labels.isEmpty {
            for index in names.indices { names[index] = labels[ObjectIdentifier(keys[index])] ?? names[index] }
        }
        let made = Table(names: names, positions: positions)
        return state.withLock { state in
            if let table = state { return table }
            state = made
            return made
        }
    }

    /// The names of distinct `keys`, qualified where two would read alike (see ``KeyNames``).
    ///
    /// - Complexity: O(keys), plus one more reflection for each key whose name is shared.
    static func names(of keys: [any ServiceKey.Type]) -> [String] {
        let given = keys.map { $0.serviceName }
        var names = given
        var qualified: Set<Int> = []
        var usesDefault: [Int: Bool] = [:]
        func isDefault(_ index: Int) -> Bool {
            if let known = usesDefault[index] { return known }
            let result = given[index] == TypeName.display(keys[index])
            usesDefault[index] = result
            return result
        }
        // First with modules; then again for a qualified name that reads like another key's own
        // (`X.ConfigKey` from module X and a `ConfigKey` nested in an enum `X`); then numbers.
        for pass in 0..<3 {
            let groups = sharedNames(names)
            if groups.isEmpty { break }
            var changed = false
            for group in groups {
                for (position, index) in group.enumerated() where isDefault(index) {
                    if pass < 2 {
                        guard qualified.insert(index).inserted else { continue }
                        names[index] = TypeName.qualified(keys[index])
                        changed = true
                    } else if position > 0 {
                        names[index] += " (\(position + 1))"
                    }
                }
            }
            if pass == 0 && !changed { break }
        }
        return names
    }

    /// The positions of names that occur more than once, one group per name, in order.
    private static func sharedNames(_ names: [String]) -> [[Int]] {
        var first: [String: Int] = [:]
        first.reserveCapacity(names.count)
        var groups: [Int: [Int]] = [:]
        for (index, name) in names.enumerated() {
            if let earlier = first[name] {
                groups[earlier, default: [earlier]].append(index)
            } else {
                first[name] = index
            }
        }
        return groups.keys.sorted().map { groups[$0]! }
    }
}
