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

/// The literal `#fileID` and `#line` of a `provide` call, kept unconverted so registering is cheap,
/// in 24 bytes (a line past 4,294,967,295 is kept as that).
struct SiteLiteral: Sendable {
    let fileID: StaticString
    let line: UInt32

    init(fileID: StaticString, line: UInt) {
        self.fileID = fileID
        self.line = UInt32(clamping: line)
    }

    var site: RegistrationSite { RegistrationSite(fileID: fileID.description, line: Int(line)) }

    /// Whether `other` is the same literal site (the same file literal and line): the registrations
    /// of one `provide` call.
    func isSame(as other: SiteLiteral) -> Bool {
        guard line == other.line, fileID.hasPointerRepresentation, other.fileID.hasPointerRepresentation else {
            return line == other.line && fileID.description == other.fileID.description
        }
        return fileID.utf8Start == other.fileID.utf8Start
    }
}
