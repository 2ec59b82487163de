public import ServiceGraph

// Keys of a second module, whose names read like keys of the test module (`ConfigKey`).

/// A key named like `ServiceGraphTests.ConfigKey`.
public enum ConfigKey: ServiceKey {
    public typealias Value = String
}

/// A value type of this module, for names that must keep its qualification.
public struct Token: Sendable {
    public init() {}
}
