"""``labferry completion bash|zsh|fish|powershell``: a completion script for the shell, made from the parser
itself (commands, sub-commands, options), so it never lags behind the commands.

    labferry completion bash > ~/.local/share/bash-completion/completions/labferry
    labferry completion zsh > "${fpath[1]}/_labferry"
    labferry completion fish > ~/.config/fish/completions/labferry.fish
    labferry completion powershell >> $PROFILE
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish", "powershell")


def add_parser(sub) -> None:
    p = sub.add_parser("completion", help="print a completion script for bash, zsh, fish or PowerShell")
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from app.cli import build_parser

    tree = commands(build_parser())
    print({"bash": bash, "zsh": zsh, "fish": fish, "powershell": powershell}[args.shell](tree))
    return 0


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, tuple[str, list[str]]]:
    """"copy" → (its help, its options); nested ones as "sites add"; "" → the top level's options."""
    found: dict[str, tuple[str, list[str]]] = {prefix: ("", _options(parser))}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, child in action.choices.items():
            path = f"{prefix} {name}".strip()
            found.update(commands(child, path))
            found[path] = (helps.get(name, ""), found[path][1])
    return found


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Its long options, then the values its positional arguments take where they are a fixed set (the shell of
    ``completion``, the format of a report)."""
    longs = sorted(s for action in parser._actions for s in action.option_strings if s.startswith("--"))
    values = [str(c) for action in parser._actions if not action.option_strings and action.choices
              and not isinstance(action, argparse._SubParsersAction) for c in action.choices]
    return longs + values


def _children(tree: dict, path: str) -> list[str]:
    depth = len(path.split()) if path else 0
    return sorted(name.split()[-1] for name in tree if name and name.startswith(path) and
                  len(name.split()) == depth + 1 and (not path or name.split()[:depth] == path.split()))


def bash(tree: dict) -> str:
    cases = []
    for path, (_, options) in sorted(tree.items()):
        words = " ".join(_children(tree, path) + options)
        cases.append(f'        "{path}") words="{words}" ;;')
    return "\n".join([
        "# labferry completion for bash: source it, or put it in ~/.local/share/bash-completion/completions/",
        "_labferry() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" path="" word words i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        '        [[ "$word" == -* ]] && continue',
        '        case " $(_labferry_children "$path") " in *" $word "*) path="${path:+$path }$word" ;; esac',
        "    done",
        '    case "$path" in',
        *cases,
        '        *) words="" ;;',
        "    esac",
        '    local plain="" w',
        '    for w in $words; do [[ "$w" == -* ]] || plain="$plain $w"; done',
        '    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        '    else COMPREPLY=($(compgen -W "$plain" -- "$cur")); fi',
        '    [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))',
        "    return 0",
        "}",
        "_labferry_children() {",
        '    case "$1" in',
        *(f'        "{path}") echo "{" ".join(_children(tree, path))}" ;;' for path in sorted(tree)
          if _children(tree, path)),
        "    esac",
        "}",
        "complete -o default -o filenames -F _labferry labferry",
    ])


def zsh(tree: dict) -> str:
    def described(path: str) -> str:
        return " ".join(f"'{name}:{_quote(tree[f'{path} {name}'.strip()][0], chr(39))}'"
                        for name in _children(tree, path))

    cases = []
    for path, (_, options) in sorted(tree.items()):
        names = _children(tree, path)
        if names:
            cases.append(f"    '{path}') local -a c; c=({described(path)}); _describe 'command' c ;;")
        else:
            opts = " ".join(f"'{o}'" for o in options if o.startswith("--"))
            values = " ".join(o for o in options if not o.startswith("--"))
            first = f"'1:value:({values})'" if values else "'*:file:_files'"
            cases.append(f"    '{path}') _arguments {first} {opts} ;;")
    return "\n".join([
        "#compdef labferry",
        "# labferry completion for zsh: put it in a folder of $fpath as _labferry (or source it)",
        "_labferry() {",
        '  local path="" w next',
        "  local -a known",
        "  known=(" + " ".join(f"'{p}'" for p in sorted(tree) if p) + ")",
        "  for w in ${words[2,CURRENT-1]}; do",
        '    [[ $w == -* ]] && continue',
        '    next="${path:+$path }$w"',
        '    (( ${known[(Ie)$next]} )) && path="$next"',
        "  done",
        '  case "$path" in',
        *cases,
        "    *) _files ;;",
        "  esac",
        "}",
        'if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _labferry "$@"; else compdef _labferry labferry; fi',
    ])


def fish(tree: dict) -> str:
    lines = ["# labferry completion for fish: put it in ~/.config/fish/completions/labferry.fish",
             "complete -c labferry -f"]
    for path, (help_text, options) in sorted(tree.items()):
        words = path.split()
        if words:
            parent = words[:-1]
            condition = ("__fish_use_subcommand" if not parent else
                         f"__fish_seen_subcommand_from {parent[-1]}; and not __fish_seen_subcommand_from "
                         f"{' '.join(_children(tree, ' '.join(parent)))}")
            lines.append(f"complete -c labferry -n '{condition}' -a {words[-1]} -d {_fish_quote(help_text)}")
        scope = f"-n '__fish_seen_subcommand_from {words[-1]}'" if words else "-n '__fish_use_subcommand'"
        for option in options:
            lines.append(f"complete -c labferry {scope} -l {option[2:]}" if option.startswith("--") else
                         f"complete -c labferry {scope} -a {option}")
        if words and not _children(tree, path) and all(o.startswith("--") for o in options):  # files, paths
            lines.append(f"complete -c labferry -n '__fish_seen_subcommand_from {words[-1]}' -F")
    return "\n".join(lines)


def powershell(tree: dict) -> str:
    entries = []
    for path, (_, options) in sorted(tree.items()):
        words = ", ".join(f"'{w}'" for w in _children(tree, path) + options)
        entries.append(f"    '{path}' = @({words})")
    return "\n".join([
        "# labferry completion for PowerShell: add it to $PROFILE",
        "$labferryWords = @{",
        *entries,
        "}",
        "Register-ArgumentCompleter -Native -CommandName labferry, labferry.exe -ScriptBlock {",
        "    param($wordToComplete, $commandAst, $cursorPosition)",
        "    $path = ''",
        "    foreach ($element in $commandAst.CommandElements | Select-Object -Skip 1) {",
        "        $word = $element.ToString()",
        "        if ($word -eq $wordToComplete -or $word.StartsWith('-')) { continue }",
        "        $next = ($path + ' ' + $word).Trim()",
        "        if ($labferryWords.ContainsKey($next)) { $path = $next }",
        "    }",
        "    $labferryWords[$path] | Where-Object { $_ -like \"$wordToComplete*\" } | ForEach-Object {",
        "        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)",
        "    }",
        "}",
    ])


def _quote(text: str, quote: str) -> str:
    return text.replace(quote, "").replace(":", r"\:").replace("\n", " ")[:80]


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'")[:80] + "'"
