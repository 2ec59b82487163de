/// Where a provider was registered: the file and line of the `provide` call.
public struct RegistrationSite: Sendable, Hashable, CustomStringConvertible {
    /// The file, as `#fileID` spells it (`Module/File.swift`).
    public let fileID: String
    /// The line of the `provide` call.
    public let line: Int

    public init(fileID: String, line: Int) {
        self.fileID = fileID
        self.line = line
    }

    public var description: String { "\(fileID):\(line)" }
}

/// The literal `#fileID` and `#line` of a `provide` call, kept unconverted so registering is cheap.
struct SiteLiteral: Sendable {
    let fileID: StaticString
    let line: UInt

    var site: RegistrationSite { RegistrationSite(fileID: fileID.description, line: Int(line)) }
}
