# Writes the Markdown of symcoll(7) from its template: the line @CONFIG_VARIABLES@ becomes
# one definition-list entry per row of the configuration table in src/core/config.c.
# Usage: awk -f config-vars.awk src/core/config.c man/symcoll.7.md
# A row is ROW("NAME", "DEFAULT", "DOC" "DOC"..., parser, field): C string literals,
# adjacent ones concatenated, read as the compiler reads them.

# md_escape S: S with the characters Markdown would take for markup escaped
function md_escape(s) {
    gsub(/\\/, "\\\\", s)
    gsub(/[*_`<>\[\]]/, "\\\\&", s)
    return s
}

FNR == 1 { file++ }

file == 1 && /config_row_t config_table\[\] = \{/ { intable = 1; next }
file == 1 && intable && /^\};/ { intable = 0; next }
file == 1 && intable { table = table $0 "\n"; next }
file == 1 { next }

# Template: copy it, expanding the placeholder.
/^@CONFIG_VARIABLES@$/ {
    if (parse_table() == 0) {
        print "config-vars.awk: no ROW(\"SYMCOLL_...\") in the configuration table" > "/dev/stderr"
        exit 1
    }
    for (i = 1; i <= nrows; i++) {
        dflt = row_dflt[i] == "" ? "unset" : "`" row_dflt[i] "`"
        printf "**%s** (default: %s)\n:   %s\n\n", row_name[i], dflt, md_escape(row_doc[i])
    }
    next
}
{ print }

# parse_table(): fills row_name, row_dflt, row_doc from the table text; returns the count.
function parse_table(    n, i, c, arg, depth, instr, lit, args, inrow) {
    n = length(table)
    nrows = 0
    i = 1
    while (i <= n) {
        if (!inrow) {
            if (substr(table, i, 4) == "ROW(") {
                inrow = 1; depth = 0; arg = 1; args[1] = args[2] = args[3] = ""
                i += 4
                continue
            }
            i++
            continue
        }
        c = substr(table, i, 1)
        if (c == "\"") {
            # a string literal: append its characters (escapes decoded) to the argument
            lit = ""
            i++
            while (i <= n && (c = substr(table, i, 1)) != "\"") {
                if (c == "\\") {
                    i++
                    c = substr(table, i, 1)
                    if (c == "n") c = " "
                }
                lit = lit c
                i++
            }
            if (arg <= 3)
                args[arg] = args[arg] lit
        } else if (c == "(") {
            depth++
        } else if (c == ")") {
            if (depth == 0) {
                inrow = 0
                nrows++
                row_name[nrows] = args[1]
                row_dflt[nrows] = args[2]
                row_doc[nrows] = args[3]
            } else {
                depth--
            }
        } else if (c == "," && depth == 0) {
            arg++
        }
        i++
    }
    return nrows
}
