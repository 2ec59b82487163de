import ServiceGraph

/// Distinct key types made at run time, for large generated graphs.
///
/// Key `n` is a type spelling `n` in binary: `Bit1<Bit0<Bit1<Root>>>` is key 5. Every `n` below
/// 2^bits gets its own type (and so its own identity in the graph) with nesting only `bits` deep.
protocol GeneratedKey: ServiceKey where Value == Int {}

enum GeneratedRoot: GeneratedKey { typealias Value = Int }
enum Bit0<Inner: GeneratedKey>: GeneratedKey { typealias Value = Int }
enum Bit1<Inner: GeneratedKey>: GeneratedKey { typealias Value = Int }

extension GeneratedKey {
    static var appendingZero: any GeneratedKey.Type { Bit0<Self>.self }
    static var appendingOne: any GeneratedKey.Type { Bit1<Self>.self }
}

enum GeneratedKeys {
    /// The key type for `index`.
    static func key(_ index: Int, bits: Int = 20) -> any GeneratedKey.Type {
        var key: any GeneratedKey.Type = GeneratedRoot.self
        for bit in 0..<bits {
            key = (index >> bit) & 1 == 0 ? key.appendingZero : key.appendingOne
        }
        return key
    }

    /// Provides `key` as the sum of its dependencies' values plus one.
    static func provide(
        _ key: any GeneratedKey.Type,
        lifetime: Lifetime = .singleton,
        dependsOn dependencies: [any GeneratedKey.Type],
        into builder: inout ServiceGraph.Builder
    ) {
        func open<K: GeneratedKey>(_ key: K.Type) {
            switch dependencies.count {
            case 0: builder.provide(key, lifetime: lifetime) { 1 }
            case 1: provide1(key, dependencies[0])
            case 2: provide2(key, dependencies[0], dependencies[1])
            default: provide3(key, dependencies[0], dependencies[1], dependencies[2])
            }
        }
        func provide1<K: GeneratedKey, D1: GeneratedKey>(_ key: K.Type, _ d1: D1.Type) {
            builder.provide(key, lifetime: lifetime, dependsOn: d1) { $0 + 1 }
        }
        func provide2<K: GeneratedKey, D1: GeneratedKey, D2: GeneratedKey>(_ key: K.Type, _ d1: D1.Type, _ d2: D2.Type)
        {
            builder.provide(key, lifetime: lifetime, dependsOn: d1, d2) { $0 + $1 + 1 }
        }
        func provide3<K: GeneratedKey, D1: GeneratedKey, D2: GeneratedKey, D3: GeneratedKey>(
            _ key: K.Type,
            _ d1: D1.Type,
            _ d2: D2.Type,
            _ d3: D3.Type
        ) {
            builder.provide(key, lifetime: lifetime, dependsOn: d1, d2, d3) { $0 + $1 + $2 + 1 }
        }
        open(key)
    }

    /// Provides a chain of `length` singletons, each depending on the one before.
    static func provideChain(into builder: inout ServiceGraph.Builder, length: Int) {
        for index in 0..<length {
            provide(key(index), dependsOn: index == 0 ? [] : [key(index - 1)], into: &builder)
        }
    }
}

extension ServiceGraph {
    /// The singleton value of a generated key.
    func resolveValue(_ key: any GeneratedKey.Type) -> Int {
        func open<K: GeneratedKey>(_ key: K.Type) -> Int { self[key] }
        return open(key)
    }
}
