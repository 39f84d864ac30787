# Sourced (POSIX sh) by corpus/get-toolchains.sh and fuzz/get-glibc-sframe.sh.
# private_apt DIR TYPES SUITES NAME: a private apt state in DIR (lists, cache, an empty
# dpkg status) with one deb822 source DIR/etc/sources.list.d/NAME.sources of TYPES and
# SUITES on the system's Debian mirror; exports APT_CONFIG so apt-get and apt-cache use
# it and never touch the system's apt state.
private_apt() {
    _a=$1
    mkdir -p "$_a/lists/partial" "$_a/cache/archives/partial" "$_a/etc/sources.list.d" \
        "$_a/etc/preferences.d"
    : > "$_a/etc/sources.list"
    _uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
    printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$2" "${_uri:-http://deb.debian.org/debian}" "$3" > "$_a/etc/sources.list.d/$4.sources"
    cat > "$_a/apt.conf" <<CONF
Dir::Etc::sourcelist "$_a/etc/sources.list";
Dir::Etc::sourceparts "$_a/etc/sources.list.d";
Dir::Etc::preferencesparts "$_a/etc/preferences.d";
Dir::State::Lists "$_a/lists";
Dir::State::status "$_a/status";
Dir::Cache "$_a/cache";
APT::Sandbox::User "root";
CONF
    : > "$_a/status"
    APT_CONFIG=$_a/apt.conf
    export APT_CONFIG
}
