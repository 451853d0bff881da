// devtensor version numbers, kept in step with CMakeLists.txt's project(VERSION).
#pragma once

#define DEVTENSOR_VERSION_MAJOR 0
#define DEVTENSOR_VERSION_MINOR 1
#define DEVTENSOR_VERSION_PATCH 0
#define DEVTENSOR_VERSION_STRING "0.1.0"
