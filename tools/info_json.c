/* symcoll_info's JSON output (see info.h). */
#include <stdio.h>
#include <string.h>

#include "info.h"

int info_json;
int info_json_members;

void json_string(const char *v, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void json_str(const char *v)
{
    json_string(v, strlen(v));
}

/* starts the member NAME of the top object */
void json_member(const char *name)
{
    printf("%s\n  \"%s\": ", info_json_members++ ? "," : "", name);
}
