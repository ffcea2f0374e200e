#include "ftmesh/error.h"

const char *ftm_strerror(int err)
{
    switch (err) {
    case FTM_OK: return "success";
#define FTM_ERR_MSG_(name, msg) case FTM_##name: return msg;
    FTM_ERRNO_MAP(FTM_ERR_MSG_)
#undef FTM_ERR_MSG_
    default: return "unknown error";
    }
}

const char *ftm_err_name(int err)
{
    switch (err) {
    case FTM_OK: return "FTM_OK";
#define FTM_ERR_NAME_(name, msg) case FTM_##name: return "FTM_" #name;
    FTM_ERRNO_MAP(FTM_ERR_NAME_)
#undef FTM_ERR_NAME_
    default: return "FTM_EUNKNOWN";
    }
}
