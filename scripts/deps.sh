# Sourced by the scripts: installs the Debian packages a step needs when they are missing.
# Usage: ensure_packages pkg...

# nvcc lives outside PATH on some machines
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# -DDEVTENSOR_ENABLE_CUDA=ON where nvcc exists, OFF elsewhere
cuda_flag() {
  if command -v nvcc >/dev/null 2>&1; then echo "-DDEVTENSOR_ENABLE_CUDA=ON"; else echo "-DDEVTENSOR_ENABLE_CUDA=OFF"; fi
}
