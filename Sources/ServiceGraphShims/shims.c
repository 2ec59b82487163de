// The shims are inline functions of the header: this file gives the target a source to compile.
#include "ServiceGraphShims.h"
