/* The lesson page's fixed text (html_js.c): its style sheet, the body
 * around the picture and the script that draws and plays the parts (see
 * html.c for the data it reads: var MAIN, P). */
#ifndef FTMESH_LESSON_HTML_H
#define FTMESH_LESSON_HTML_H

extern const char ftm_lesson_page_css[];
extern const char ftm_lesson_page_body[];
extern const char ftm_lesson_page_js[];

#endif
