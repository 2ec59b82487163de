/// The key of a test double installed with `override(_:withDouble:as:)`: its value is the double,
/// with the double's own type.
public enum DoubleKey<Original: ServiceKey, Double: Sendable>: ServiceKey {
    public typealias Value = Double

    public static var serviceName: String {
        "\(Original.serviceName) double (\(TypeName.display(Double.self)))"
    }
}

/// What the builder knows of any ``DoubleKey``: the key it stands in for, so a second double for that
/// key replaces the first.
protocol TestDoubleKey {
    static var originalKeyID: ObjectIdentifier { get }
}

extension DoubleKey: TestDoubleKey {
    static var originalKeyID: ObjectIdentifier { Original._keyID }
}
