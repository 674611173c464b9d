//! Who the caller is, and the UserSessionId codec (work in progress).
