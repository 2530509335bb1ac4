# What tools/install-*.sh share; sourced, with SOURCE set: a git host holding
# OWNER/NAME, or a folder of clones laid out as OWNER+NAME/repo.

say() { echo "$(date +%H:%M:%S) $*"; }

# url OWNER/NAME: where SOURCE has that repository.
url() { if [ -d "$SOURCE" ]; then echo "$SOURCE/${1/\//+}/repo"; else echo "$SOURCE/$1"; fi; }

# fetch OWNER/NAME COMMIT DIR: a fresh tree of the repository at COMMIT. Its
# *.pptx files are left out: a mirror may lack p4c's slides, which no build reads.
fetch() {
  rm -rf "$3"
  git clone -q --no-checkout "$(url "$1")" "$3"
  git -C "$3" checkout -q "$2" -- . ':!*.pptx'
  git -C "$3" update-ref --no-deref HEAD "$2"
}
