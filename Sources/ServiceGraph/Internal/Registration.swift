/// One `provide` call, as the builder records it: nothing runs until ``ServiceGraph/Builder/build()``.
struct Registration: Sendable {
    let key: any ServiceKey.Type
    let lifetime: Lifetime
    let dependencies: [any ServiceKey.Type]
    let site: SiteLiteral
    let factory: AnyFactory
    /// Whether this registration replaces an earlier provider of the same key (see `override`).
    let isOverride: Bool

    var keyID: ObjectIdentifier { ObjectIdentifier(key) }
    var name: String { key.serviceName }
}
