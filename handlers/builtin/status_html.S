/* status_html.S — the HTML of /server-status (status.html: one self-contained page, inline CSS,
 * JS and SVG, no external resources, that polls `?json` once a second and draws the server
 * live), embedded at build time as status_page_html[status_page_html_len] (builtin.h), with a
 * NUL after it. An assembler file, so that the page is edited as HTML and needs no generator. */
    .section .rodata
    .globl status_page_html
    .type status_page_html, @object
status_page_html:
    .incbin "handlers/builtin/status.html"
status_page_html_end:
    .byte 0
    .size status_page_html, . - status_page_html

    .globl status_page_html_len
    .type status_page_html_len, @object
    .balign 8
status_page_html_len:
    .quad status_page_html_end - status_page_html
    .size status_page_html_len, 8

    /* No executable stack (the linker's default for an object without this note). */
    .section .note.GNU-stack, "", @progbits
