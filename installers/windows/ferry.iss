; Ferry for Windows: an Inno Setup 6 installer around the PyInstaller folder (dist\labferry\).
;
;   pyinstaller --noconfirm installers\labferry.spec
;   iscc /DVersion=0.1.0 installers\windows\ferry.iss      -> dist\Ferry-0.1.0-setup.exe
;
; Per-user by default (no administrator needed, as on a lab's managed laptop); an administrator may choose
; "all users". Start menu entry for the window (Ferry.exe, no console), .torrent files and magnet: links opened
; by Ferry (registered under the user's own Software\Classes, removed again by the uninstaller), and
; optionally the labferry command on the PATH.

#ifndef Version
  #define Version "0.1.0"
#endif

[Setup]
AppId={{6F0C7E0A-4D3B-4C55-9E0B-5A1F3C2B7D10}
AppName=Ferry
AppVersion={#Version}
AppPublisher=Ferry (labferry)
DefaultDirName={autopf}\Ferry
DefaultGroupName=Ferry
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=Ferry-{#Version}-setup
SetupIconFile=..\..\resources\ferry.ico
UninstallDisplayIcon={app}\Ferry.exe
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
ChangesAssociations=yes
ChangesEnvironment=yes

[Tasks]
Name: "torrents"; Description: "Open .torrent files and magnet: links with Ferry"
Name: "path"; Description: "Add the labferry command to the PATH"; Flags: unchecked

[Files]
Source: "..\..\dist\labferry\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Ferry"; Filename: "{app}\Ferry.exe"; WorkingDir: "{userdocs}"
Name: "{group}\Uninstall Ferry"; Filename: "{uninstallexe}"

[Registry]
; .torrent -> Ferry (HKA: the user's own classes, or the machine's when installed for all users)
Root: HKA; Subkey: "Software\Classes\.torrent\OpenWithProgids"; ValueType: string; ValueName: "Ferry.torrent"; ValueData: ""; Flags: uninsdeletevalue; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\Ferry.torrent"; ValueType: string; ValueName: ""; ValueData: "BitTorrent document"; Flags: uninsdeletekey; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\Ferry.torrent\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\Ferry.exe,0"; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\Ferry.torrent\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Ferry.exe"" ""%1"""; Tasks: torrents
; magnet: -> Ferry
Root: HKA; Subkey: "Software\Classes\magnet"; ValueType: string; ValueName: ""; ValueData: "URL:BitTorrent magnet link"; Flags: uninsdeletekey; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\magnet"; ValueType: string; ValueName: "URL Protocol"; ValueData: ""; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\magnet\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\Ferry.exe,0"; Tasks: torrents
Root: HKA; Subkey: "Software\Classes\magnet\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Ferry.exe"" ""%1"""; Tasks: torrents
; the labferry command on the user's PATH
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{olddata};{app}"; Tasks: path; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\Ferry.exe"; Description: "Start Ferry"; Flags: nowait postinstall skipifsilent

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Current: string;
begin
  if not RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Current) then
    Current := '';
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Current) + ';') = 0;
end;
